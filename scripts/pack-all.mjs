#!/usr/bin/env node
// `pnpm pack:all [destination]`: one tarball per publishable package
// (packages/*, not private) written by `pnpm pack` into one folder,
// `dist-packages/` at the repository root by default (gitignored, emptied
// first). `pnpm pack` rewrites `workspace:*` dependencies to the real version,
// so the tarballs install together with plain npm: the command printed at the
// end lists every tarball, @durable-a2a/shared included (producer and workers
// depend on it, and it is not on the registry until published). Expects
// `pnpm build` to have run (the tarballs hold dist/).
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const destination = resolve(process.argv[2] ?? join(root, 'dist-packages'));
const packagesDirectory = join(root, 'packages');

rmSync(destination, { recursive: true, force: true });
mkdirSync(destination, { recursive: true });
const publishable = readdirSync(packagesDirectory).filter((name) => {
  const manifest = JSON.parse(readFileSync(join(packagesDirectory, name, 'package.json'), 'utf8'));
  return manifest.private !== true;
});
for (const name of publishable) {
  execFileSync('pnpm', ['pack', '--pack-destination', destination], { cwd: join(packagesDirectory, name), stdio: ['ignore', 'ignore', 'inherit'] });
}
const tarballs = readdirSync(destination).filter((file) => file.endsWith('.tgz')).sort();

console.log(`${tarballs.length} tarballs in ${destination}:`);
for (const file of tarballs) console.log(`  ${file}`);
console.log(`\nInstall them together (one command, so @durable-a2a/shared resolves from its tarball):`);
console.log(`  npm install ${tarballs.map((file) => join(destination, file)).join(' ')}`);
