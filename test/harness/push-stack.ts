/**
 * A pushed-delegation stack for tests: the API server listening on loopback (its push webhook), a producer and,
 * unless `workers: false`, an in-process fleet, all on one prefix; `delegatePushed` starts one pushed step at an
 * agent. Torn down with `close()`.
 */
import { createProducer } from '@durable-a2a/producer';
import type { Fleet } from '@durable-a2a/workers';
import { eventually, startTestFleet } from './fleet.ts';
import { listenOnLoopback, startTestServer } from './api-server.ts';

/** Starts the stack on `prefix` against the redis-server at `redisUrl`. */
export async function startPushStack(redisUrl: string, prefix: string, workers = true) {
  const app = startTestServer({ redisUrl, prefix });
  const webhookUrl = `${await listenOnLoopback(app)}/v1/push`;
  const producer = createProducer({ redis: redisUrl, addressPolicy: { allowLoopback: true }, prefix });
  const fleet: Fleet | undefined = workers ? await startTestFleet({ redisUrl, prefix, webhookUrl }) : undefined;
  return {
    app,
    producer,
    fleet,
    webhookUrl,
    async close() {
      await fleet?.close();
      await app.close();
      await producer.close();
    },
  };
}
export type PushStack = Awaited<ReturnType<typeof startPushStack>>;

/** Starts one pushed delegation (step `main`, `push: true`) at the agent of `cardUrl`; resolves with its ref and a reader of its row. */
export async function delegatePushed(env: PushStack, cardUrl: string, workflowId: string) {
  await env.producer.startWorkflow({ workflowId, steps: [{ name: 'main', agent: cardUrl, message: { text: 'go' }, push: true }] });
  const ref = { workflowId, delegationId: 'main.1' };
  const record = async () => (await env.producer.journal.getDelegation(ref))!;
  return { ref, record };
}

/** Waits (up to 30 s) until the workflow is COMPLETED; resolves with its view. */
export const completedView = (env: PushStack, workflowId: string) =>
  eventually(async () => {
    const view = await env.producer.get(workflowId);
    return view.state === 'COMPLETED' && view;
  }, `workflow ${workflowId} completed`, 30_000);
