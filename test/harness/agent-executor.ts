/** Moved to @durable-a2a/testing; re-exported so existing imports keep working. */
export { ScriptedExecutor } from '@durable-a2a/testing';
export type { ReceivedMessage } from '@durable-a2a/testing';
