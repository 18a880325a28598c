#!/usr/bin/env node
// The HTTP API: runs the compiled JavaScript (`pnpm build` writes dist/) with plain node.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
const main = new URL('../dist/server/main.js', import.meta.url);
if (!existsSync(main)) {
  process.stderr.write(`durable-a2a-api: ${fileURLToPath(main)} not found: run \`pnpm build\` first (in the clone of durable-a2a)\n`);
  process.exit(1);
}
await import(main.href);
