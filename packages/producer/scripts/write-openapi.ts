/**
 * Writes the HTTP service's OpenAPI document (the one `/openapi.json`
 * serves) to the file named by the first argument, for `pnpm lint:openapi`.
 * Needs no Redis: the server is built, never listens, and is closed at once.
 */
import { writeFile } from 'node:fs/promises';
import { createLogger } from '@durable-a2a/shared';
import { createServer } from '../src/server/index.ts';

const target = process.argv[2];
if (!target) {
  console.error('usage: write-openapi.ts <file.json>');
  process.exit(2);
}
// Port 1 on loopback: nothing listens there, and nothing is sent before close.
const app = createServer({ redisUrl: 'redis://127.0.0.1:1', apiTokens: ['openapi'], logger: createLogger({ level: 'silent' }), commandTimeoutMs: 100 });
await app.ready();
await writeFile(target, `${JSON.stringify(app.swagger(), null, 2)}\n`);
// No close: with no Redis the client would keep reconnecting; nothing was written anywhere.
process.exit(0);
