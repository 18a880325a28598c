#!/usr/bin/env node
// The HTTP API: runs the compiled JavaScript (`pnpm build` writes dist/) with plain node.
await import('../dist/server/main.js');
