/**
 * Debian chromium for browser tests, headless, via playwright-core. Tests
 * skip (with the reason) only when no chromium binary exists.
 */
import { accessSync, constants } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';

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

/** Pages of one deployment on loopback, watched: see `loopbackPages`. */
export interface LoopbackPages {
  /** A page in a fresh browser context (no cookie, no token), 1400×1000. */
  newPage(): Promise<Page>;
  /** Every request a page made to anything but 127.0.0.1 (`data:` aside): a test asserts it stays empty. */
  offSite: string[];
  /** What the pages' Content-Security-Policy refused: a test asserts it stays empty (the policy must leave the pages working). */
  cspViolations: string[];
}

/** New pages in `browser()` (read when a page is made, so it may be launched later), each watched for off-site requests and CSP refusals. */
export function loopbackPages(browser: () => Browser): LoopbackPages {
  const offSite: string[] = [];
  const cspViolations: string[] = [];
  const newPage = async (): Promise<Page> => {
    const context = await browser().newContext({ viewport: { width: 1400, height: 1000 } });
    context.on('request', (request) => {
      const url = new URL(request.url());
      if (url.hostname !== '127.0.0.1' && url.protocol !== 'data:') offSite.push(request.url());
    });
    const page = await context.newPage();
    watchContentSecurityPolicy(page, cspViolations);
    return page;
  };
  return { newPage, offSite, cspViolations };
}
