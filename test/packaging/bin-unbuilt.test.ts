/**
 * The three executables run `dist/`, which only `pnpm build` writes. Started from a clone before the build,
 * each says so in one line (exit 1) instead of a Node stack trace about ERR_MODULE_NOT_FOUND.
 */
import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const BINARIES = ['cli/bin/durable-a2a.mjs', 'producer/bin/durable-a2a-api.mjs', 'workers/bin/durable-a2a-workers.mjs'];
const scratch = await mkdtemp(join(tmpdir(), 'da2a-unbuilt-'));
afterAll(() => rm(scratch, { recursive: true, force: true }));

it.each(BINARIES)('%s without dist/ names the missing build in one line, exit 1', async (binary) => {
  // The bin file alone, where its package has no dist/ (as in a clone before `pnpm build`).
  const copy = join(scratch, binary);
  await mkdir(join(copy, '..'), { recursive: true });
  await copyFile(join(root, 'packages', binary), copy);
  const { code, stderr } = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
    const child = execFile(process.execPath, [copy], { timeout: 20_000, env: { PATH: process.env.PATH ?? '' } }, (_error, _stdout, stderr) =>
      resolve({ code: child.exitCode, stderr }),
    );
  });
  expect(code).toBe(1);
  expect(stderr).toContain('run `pnpm build` first');
  expect(stderr).not.toContain('ERR_MODULE_NOT_FOUND');
  expect(stderr.trim().split('\n')).toHaveLength(1);
});
