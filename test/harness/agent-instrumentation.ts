/** Moved to @durable-a2a/testing; re-exported so existing imports keep working. */
export { countingRequestHandler, streamDropper } from '@durable-a2a/testing';
export type { A2AMethod } from '@durable-a2a/testing';
