/**
 * CPU of decoding the agent's answers a happy-path delegation gets (the worker's side of the A2A boundary): the
 * SendMessage answer (a submitted task), the GetTask answer (the completed task with its artifact) and the refused
 * SubscribeToTask (a task already finished), each as the JSON-RPC transport decodes it (`JSON.parse`, the envelope,
 * the result's zod schema or the error's mapping), and the events of a SubscribeToTask stream that opens before the
 * task finishes (agent work > 0: the task snapshot, the artifact update, the terminal status update). Bodies as the
 * bench agent (@a2a-js/sdk) sends them.
 *
 *   pnpm tsx --conditions=@durable-a2a/source bench/a2a-decode.ts [batches, default 6] [calls per batch, default 20000]
 *
 * Prints the minimum µs per call over the batches of each answer.
 */
import { decodeJsonRpcEnvelope } from '../packages/a2a/src/jsonrpc.ts';
import { SendMessageResponseSchema, StreamResponseSchema, TaskResultSchema } from '../packages/a2a/src/schema.ts';

const TASK_ID = 'c427d777-b55b-4663-bfd0-93f9f858a982';
const HISTORY = `[{"messageId":"m-123e4567-e89b-12d3-a456-426614174000","contextId":"c-1","taskId":"${TASK_ID}","role":"ROLE_USER","parts":[{"text":"r0-17"}],"metadata":{"durableA2a":{"workflowId":"r0-17","step":"main","attempt":1}}}]`;
const BODIES = {
  send: `{"jsonrpc":"2.0","id":7,"result":{"task":{"id":"${TASK_ID}","contextId":"c-1","status":{"state":"TASK_STATE_SUBMITTED","timestamp":"2026-12-05T12:25:59.365Z"},"history":${HISTORY}}}}`,
  get: `{"jsonrpc":"2.0","id":7,"result":{"id":"${TASK_ID}","contextId":"c-1","status":{"state":"TASK_STATE_COMPLETED","timestamp":"2026-12-05T12:25:59.365Z"},"artifacts":[{"artifactId":"result","parts":[{"text":"the result of the delegation","mediaType":"text/plain"}]}],"history":${HISTORY}}}`,
  streamTask: `{"jsonrpc":"2.0","id":7,"result":{"task":{"id":"${TASK_ID}","contextId":"c-1","status":{"state":"TASK_STATE_WORKING","timestamp":"2026-12-05T12:25:59.365Z"},"history":${HISTORY}}}}`,
  streamArtifact: `{"jsonrpc":"2.0","id":7,"result":{"artifactUpdate":{"taskId":"${TASK_ID}","contextId":"c-1","artifact":{"artifactId":"result","parts":[{"text":"the result of the delegation","mediaType":"text/plain"}]},"lastChunk":true}}}`,
  streamStatus: `{"jsonrpc":"2.0","id":7,"result":{"statusUpdate":{"taskId":"${TASK_ID}","contextId":"c-1","status":{"state":"TASK_STATE_COMPLETED","timestamp":"2026-12-05T12:25:59.415Z"}}}}`,
  subscribe: `{"jsonrpc":"2.0","id":7,"error":{"code":-32004,"message":"Task ${TASK_ID} is in a terminal state (3) and cannot be subscribed to.","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"UNSUPPORTED_OPERATION","domain":"a2a-protocol.org"}]}}`,
};

const cases: Record<keyof typeof BODIES, () => unknown> = {
  send: () => decodeJsonRpcEnvelope(JSON.parse(BODIES.send), BODIES.send, SendMessageResponseSchema, 'SendMessage', 200, 7),
  get: () => decodeJsonRpcEnvelope(JSON.parse(BODIES.get), BODIES.get, TaskResultSchema, 'GetTask', 200, 7),
  streamTask: () => decodeJsonRpcEnvelope(JSON.parse(BODIES.streamTask), BODIES.streamTask, StreamResponseSchema, 'stream event', undefined, 7),
  streamArtifact: () => decodeJsonRpcEnvelope(JSON.parse(BODIES.streamArtifact), BODIES.streamArtifact, StreamResponseSchema, 'stream event', undefined, 7),
  streamStatus: () => decodeJsonRpcEnvelope(JSON.parse(BODIES.streamStatus), BODIES.streamStatus, StreamResponseSchema, 'stream event', undefined, 7),
  subscribe: () => {
    try {
      return decodeJsonRpcEnvelope(JSON.parse(BODIES.subscribe), BODIES.subscribe, TaskResultSchema, 'SubscribeToTask', 200, 7);
    } catch (error) {
      return error;
    }
  },
};

const batches = Number(process.argv[2] ?? 6);
const calls = Number(process.argv[3] ?? 20_000);
const best = new Map<string, number>();
for (let batch = 0; batch < batches; batch++) {
  for (const [name, run] of Object.entries(cases)) {
    const start = process.cpuUsage();
    for (let index = 0; index < calls; index++) run();
    const used = process.cpuUsage(start);
    const us = (used.user + used.system) / calls;
    best.set(name, Math.min(best.get(name) ?? Infinity, us));
  }
}
for (const [name, us] of best) console.log(`${name.padEnd(10)} ${us.toFixed(2)} µs per answer`);
