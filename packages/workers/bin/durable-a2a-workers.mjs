#!/usr/bin/env node
// The worker fleet: runs the compiled JavaScript (`pnpm build` writes dist/) with plain node.
await import('../dist/main.js');
