/**
 * A pushed delegation bound to T1 at a raw JSON-RPC agent, for the push route's suspect cases
 * (test/send/foreign-holder-attacks-22.test.ts, test/send/foreign-holder-unread.test.ts): the agent answers
 * SendMessage with T1 (holding our message), follows it on a stream that hangs, answers GetTask with `getTask`
 * (or, when `answer` gives one, that answer: a failure), and the test pushes bodies to the webhook with the
 * delegation's token.
 */
import { request } from 'undici';
import { eventually } from './fleet.ts';
import { delegatePushed, startPushStack } from './push-stack.ts';
import { startScriptedAgent, taskEvent, type ScriptedAnswer } from './scripted-agent.ts';
import { holder, listing, receivedOf, type Received } from './holders.ts';

let counter = 0;

/** Where the scene runs: the redis-server's URL and the test's closer (`closeKeptAfterEach`). */
export interface SceneHost {
  redisUrl: string;
  keep: (...closables: { close(): Promise<unknown> }[]) => void;
}

export async function pushScene(host: SceneHost, getTask: (taskId: string, received: Received) => unknown, answer?: (taskId: string) => ScriptedAnswer | undefined) {
  const prefix = `pushscene-${++counter}-${Date.now()}`;
  const env = await startPushStack(host.redisUrl, prefix);
  let received: Received | undefined;
  const agent = await startScriptedAgent({
    SendMessage: async (params) => {
      received ??= receivedOf(params);
      return { result: { task: holder('T1', 'WORKING', received) } };
    },
    SubscribeToTask: () => ({ sse: [taskEvent(holder('T1', 'WORKING', received!))], endAfter: 'hang' }),
    GetTask: async (params) => answer?.(String(params.id)) ?? { result: await getTask(String(params.id), received!) },
    ListTasks: async () => listing([holder('T1', 'WORKING', received!)]),
  });
  host.keep(env, agent);
  const workflowId = `wf-${prefix}`;
  const { ref, record } = await delegatePushed(env, agent.cardUrl, workflowId);
  await eventually(async () => agent.count('SendMessage') === 1, 'our message sent', 20_000);
  const secret = (await env.producer.journal.pushToken(ref))!;
  const messageId = (await record()).messageId;
  await eventually(async () => (await record()).taskId === 'T1' && (await record()).state === 'WORKING', 'T1 bound', 20_000);
  const raw = async (body: string, contentType = 'application/a2a+json') => {
    const answered = await request(`${env.webhookUrl}/${workflowId}/main.1`, { method: 'POST', body, headers: { authorization: `Bearer ${secret}`, 'content-type': contentType } });
    return { status: answered.statusCode, body: await answered.body.text() };
  };
  const push = async (body: unknown) => (await raw(JSON.stringify(body))).status;
  /** A pushed Task `id` whose history shows our message (what `suspectOf` takes for a suspect). */
  const holding = (id: string) => ({ task: { id, contextId: received!.contextId, status: { state: 'TASK_STATE_WORKING' }, history: [{ role: 'ROLE_USER', messageId, parts: [{ text: 'go' }] }] } });
  return { env, prefix, agent, ref, record, messageId, push, raw, holding, workflowId, contextId: () => received!.contextId };
}

/** How many GetTask calls named `taskId`. */
export const getTaskCalls = (agent: { calls(method: string): { params: any }[] }, taskId: string) => agent.calls('GetTask').filter((call) => call.params.id === taskId).length;
