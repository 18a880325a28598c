/**
 * Debian chromium for browser tests, headless, via playwright-core. Tests
 * skip (with the reason) only when no chromium binary exists.
 */
import { accessSync, constants } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Why browser tests cannot run here, or undefined when chromium is there. */
export const chromiumMissing: string | undefined = (() => {
  try {
    accessSync(CHROMIUM, constants.X_OK);
    return undefined;
  } catch {
    return `no chromium at ${CHROMIUM} (apt-get install -y chromium, or set CHROMIUM_PATH)`;
  }
})();

/** Launches headless chromium with no network of its own (no updates, no sync, no QUIC). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** Collects into `violations` every console message of `page` saying the Content-Security-Policy refused something. */
export function watchContentSecurityPolicy(page: { on(event: 'console', listener: (message: { text(): string }) => void): unknown }, violations: string[]): void {
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) violations.push(message.text());
  });
}
