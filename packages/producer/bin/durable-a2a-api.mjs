#!/usr/bin/env node
// Runs the TypeScript sources through tsx's loader (no build step needed).
import { register } from 'tsx/esm/api';
register();
await import('../src/server/main.ts');
