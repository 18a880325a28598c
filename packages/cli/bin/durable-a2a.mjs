#!/usr/bin/env node
// The durable-a2a CLI: runs the compiled JavaScript (`pnpm build` writes dist/) with plain node.
await import('../dist/main.js');
