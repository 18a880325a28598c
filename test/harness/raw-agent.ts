/** Moved to @durable-a2a/testing; re-exported so existing imports keep working. */
export { jsonRpcError, jsonRpcResult, sendJson, sseEvent, sseHeaders, startRawAgent } from '@durable-a2a/testing';
export type { RawAgentHandle, RawAgentHandler, RawRequest } from '@durable-a2a/testing';
