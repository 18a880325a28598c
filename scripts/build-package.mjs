#!/usr/bin/env node
// `pnpm build` in one package: a clean dist/ from src/ (tsc with
// tsconfig.build.json: JS, .d.ts, source maps, `.ts` import paths rewritten to
// `.js`), then the non-TypeScript assets the code reads at run time.
import { cpSync, existsSync, rmSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const typescriptCompiler = require.resolve('typescript/bin/tsc');
rmSync('dist', { recursive: true, force: true });
execFileSync(process.execPath, [typescriptCompiler, '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
// Lua scripts the journal loads next to its module (packages/shared).
if (existsSync('src/journal/lua')) cpSync('src/journal/lua', 'dist/journal/lua', { recursive: true });
