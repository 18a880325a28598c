/** Moved to @durable-a2a/testing; re-exported so existing imports keep working. */
export { quietSdkConsole } from '@durable-a2a/testing';
