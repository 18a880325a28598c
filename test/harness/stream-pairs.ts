/**
 * A rig for attacks on a stream's event pairing (test/attack-stream-pairs*.test.ts): one scripted agent, producer
 * and fleet run many delegations at once, each with its own SSE story (keyed by the delegation's message text), and
 * report per delegation what the journal holds, which journal scripts ran on it (MONITOR), what the agent saw and
 * whether the follow lease is still held. `oneByOne` applies the same events one at a time through the journal API
 * (the reference the pairing must match).
 */
import { Redis } from 'ioredis';
import { isTerminalTaskState } from '@durable-a2a/a2a';
import { Journal, applyStreamResponse, applyTask, isFinished, type DelegationView } from '@durable-a2a/shared';
import { createProducer, type Producer } from '@durable-a2a/producer';
import type { Fleet, StartFleetOptions } from '@durable-a2a/workers';
import { artifactByteSize } from '../../packages/a2a/src/limits.ts';
import { StreamResponseSchema } from '../../packages/a2a/src/schema.ts';
import { scriptSha } from '../../packages/shared/src/journal/scripts.ts';
import { eventually, startTestFleet } from './fleet.ts';
import { intentRow } from './journal-rows.ts';
import { startScriptedAgent, task, taskEvent, type ScriptedAgentHandle, type SseWait } from './scripted-agent.ts';
import { startMonitor } from './redis.ts';

/** The task and context ids a story's events name, and the JSON-RPC id of the SubscribeToTask request it answers. */
export interface Ids {
  taskId: string;
  contextId: string;
  requestId?: unknown;
}

/**
 * `bytes` (events as `SU`/`AU` write them, `"id":1`) answering the request of `ids`. The scripted agent frames each
 * chunk it writes on its own: a story that cuts its bytes inside `"jsonrpc":"2.0","id":1,` frames them first.
 */
export const frame = (bytes: string, ids: Ids): string => bytes.replaceAll('"jsonrpc":"2.0","id":1,', `"jsonrpc":"2.0","id":${JSON.stringify(ids.requestId ?? null)},`);

/** What the agent's SubscribeToTask writes after its first event (a WORKING snapshot), then how it ends (default hang). */
export interface Story {
  sse: (string | SseWait)[];
  endAfter?: 'close' | 'destroy' | 'hang';
}

/** The journal's view of an attempt, without times, versions and ids (comparable across delegations). */
export interface Normal {
  state: string;
  artifacts: DelegationView['artifacts'];
  errorCode?: string;
  questionKey?: string;
  statusText?: string;
}

/** One delegation's outcome. */
export interface Outcome {
  key: string;
  normal: Normal;
  /** Journal scripts run on its row, by name (applyArtifact, applyArtifactThenStatus). */
  calls: Record<string, number>;
  sendMessages: number;
  getTasks: number;
  /** The follow lease still held 1.5 s after the attempt reached its state (the rig's lease lasts 30 s). */
  leaseHeld: boolean;
  /** Bytes of the artifacts journaled (artifactByteSize, as the limit counts them). */
  artifactBytes: number;
}

export const normalOf = (view: DelegationView): Normal => ({
  state: view.state,
  artifacts: view.artifacts,
  ...(view.error ? { errorCode: view.error.code } : {}),
  ...(view.questionKey ? { questionKey: view.questionKey } : {}),
  ...(view.statusMessage ? { statusText: view.statusMessage.parts.map((part) => part.text ?? '').join('') } : {}),
});

/** The rig's agent's GetTask answer: COMPLETED, no artifacts, a status message of its own (a read shows in the journal). */
const readAnswer = (taskId: string, contextId: string) => task(taskId, 'COMPLETED', { contextId, message: { messageId: 'read', role: 'ROLE_AGENT', parts: [{ text: 'as read' }] } });

const WATCHED = ['applyArtifact', 'applyArtifactThenStatus'] as const;

/**
 * The journal script an EVALSHA seen by MONITOR (`args`: the command and its arguments) ran, as the pair tests name it:
 * 'applyArtifact', 'applyArtifactThenStatus', or undefined for any other. The pair that ends a one-step workflow
 * (finish-step.ts: its settle in the same script) counts as the pair: `applyArtifactThenFinishStep`, or `finishStep`
 * adding the artifact update itself (finishStep-5.lua ARGV[10] 'add', after its 5 keys).
 */
export function pairScriptOf(args: readonly string[]): (typeof WATCHED)[number] | undefined {
  const sha = args[1];
  const watched = WATCHED.find((name) => scriptSha(name) === sha);
  if (watched) return watched;
  if (sha === scriptSha('applyArtifactThenFinishStep') || (sha === scriptSha('finishStep') && args[3 + 5 + 9] === 'add')) return 'applyArtifactThenStatus';
  return undefined;
}
let references = 0;

/**
 * The attempt as the subscription's WORKING snapshot, then `events` (wire JSON-RPC envelopes, as `SU`/`AU` write them),
 * applied one at a time through `applyStreamResponse` leave it (a COMPLETED status update after no artifacts, or after
 * a Task that left out an artifact the journal held, or a finished status update after appended chunks, takes the
 * agent's GetTask answer instead: R26, attack13, a partial view). As on a stream, nothing applies after the row is
 * finished, after an event the journal refuses (over the artifact limit), and after a protocol error (an event that does
 * not parse, or names another task); then, with `readAtEnd` and the row unfinished, the agent's GetTask answer (COMPLETED,
 * `readAnswer`, as `PairRig`'s agent gives it) applies as a snapshot.
 */
export async function oneByOne(redis: Redis, events: (ids: Ids) => string[], options: { readAtEnd?: boolean } = {}): Promise<Normal> {
  const workflowId = `reference-${++references}`;
  const journal = new Journal(redis, { prefix: `asp-reference-${references}`, retentionMs: 60_000 });
  const ref = { workflowId, delegationId: 'main.1' };
  const ids = { taskId: `T-${workflowId}`, contextId: `C-${workflowId}` };
  await journal.createWorkflow(workflowId, { state: 'RUNNING' }, intentRow(workflowId));
  const fence = await journal.claim(ref, 'reference');
  await journal.applyStatus(ref, { fence, mode: 'event', state: 'SUBMITTED', ...ids, agentCardUrl: 'http://agent.example/.well-known/agent-card.json' });
  const record = (await journal.getDelegation(ref))!;
  const parse = (payload: string) => StreamResponseSchema.parse((JSON.parse(payload) as { result: unknown }).result);
  const snapshot = JSON.stringify({ jsonrpc: '2.0', id: 1, result: { task: task(ids.taskId, 'WORKING', { contextId: ids.contextId }) } });
  const readAnswerTask = () => {
    const answer = parse(JSON.stringify({ result: { task: readAnswer(ids.taskId, ids.contextId) } }));
    return 'task' in answer ? answer.task : undefined;
  };
  let sawArtifacts = false;
  // Appended chunks make the streamed artifacts a partial view: a finished status after them takes the full read instead.
  let partial = false;
  // A Task of ours whose artifacts leave out one the journal held takes them back (attack13): a COMPLETED status update
  // after it takes the full read, until a later Task keeps what the journal holds.
  let takenBack = false;
  for (const payload of [snapshot, ...events(ids)]) {
    let response;
    try {
      response = parse(payload);
    } catch {
      break;
    }
    if ('task' in response && response.task.id === ids.taskId && response.task.artifacts?.length) {
      const kept = new Set(response.task.artifacts.map((artifact) => artifact.artifactId));
      takenBack = (await journal.getDelegationView(ref))!.artifacts.some((artifact) => !kept.has(artifact.artifactId));
    }
    if ('artifactUpdate' in response || ('task' in response && response.task.artifacts?.length)) sawArtifacts = true;
    if ('artifactUpdate' in response && response.artifactUpdate.taskId === ids.taskId && (response.artifactUpdate.append === true || response.artifactUpdate.lastChunk === false)) partial = true;
    else if ('task' in response && response.task.artifacts?.length) partial = false;
    // After appended chunks, a finished status is journaled from the agent's GetTask answer (no artifacts: the streamed ones stay).
    if (partial && 'statusUpdate' in response && response.statusUpdate.taskId === ids.taskId && isTerminalTaskState(response.statusUpdate.status.state)) {
      await applyTask(journal, ref, readAnswerTask()!, { fence, snapshot: true });
      break;
    }
    // R26: a COMPLETED status update after no artifacts, on a row holding none: the GetTask answer applies instead.
    const collect = 'statusUpdate' in response && response.statusUpdate.taskId === ids.taskId && response.statusUpdate.status.state === 'TASK_STATE_COMPLETED' && (!sawArtifacts || takenBack);
    if (collect && (takenBack || (await journal.getDelegationView(ref))!.artifacts.length === 0)) {
      await applyTask(journal, ref, readAnswerTask()!, { fence, snapshot: true });
      break;
    }
    const result = await applyStreamResponse(journal, record, response, { fence, snapshot: 'task' in response }).catch(() => undefined);
    if (!result || result.foreignTaskId || isFinished((await journal.getDelegation(ref))!.state)) break;
  }
  if (options.readAtEnd && !isFinished((await journal.getDelegation(ref))!.state)) {
    await applyTask(journal, ref, readAnswerTask()!, { fence, snapshot: true });
  }
  return normalOf((await journal.getDelegationView(ref))!);
}

/** Stories that cut `length` characters in two at every position (two reads, 5 ms apart), and one that writes each character apart. */
export function splitEverywhere(length: number): ((bytes: string) => (string | SseWait)[])[] {
  const cuts = Array.from({ length: length - 1 }, (_, index) => (bytes: string) => [bytes.slice(0, index + 1), { waitMs: 5 }, bytes.slice(index + 1)]);
  return [...cuts, (bytes: string) => [...bytes].flatMap((character) => [character, { waitMs: 0 }])];
}

/** One agent, producer and fleet for many delegations, each with its own story. */
export class PairRig {
  private counter = 0;

  private constructor(
    private readonly prefix: string,
    private readonly monitor: Redis,
    /** Journal scripts run per workflow id, by name (filled by MONITOR). */
    private readonly calls: Map<string, Record<string, number>>,
    /** Each delegation's story, by its message text; and that text by task id (as SendMessage named it). */
    private readonly stories: Map<string, (ids: Ids) => Story>,
    private readonly keyOfTask: Map<string, string>,
    readonly agent: ScriptedAgentHandle,
    readonly producer: Producer,
    readonly fleet: Fleet,
  ) {}

  /** Starts MONITOR (first, while Redis is quiet), the agent, the producer and a fleet whose reconciler stays away. */
  static async start(redisUrl: string, prefix: string, fleetOptions: Partial<StartFleetOptions> = {}): Promise<PairRig> {
    const monitor = await startMonitor(redisUrl);
    const calls = new Map<string, Record<string, number>>();
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (source.includes('lua') || (args[0] ?? '').toLowerCase() !== 'evalsha' || !(args[3] ?? '').startsWith(`${prefix}:`)) return;
      const name = pairScriptOf(args);
      const workflowId = /\{wf:([^}]+)\}/.exec(args[3]!)?.[1];
      if (!name || !workflowId) return;
      const counts = calls.get(workflowId) ?? {};
      counts[name] = (counts[name] ?? 0) + 1;
      calls.set(workflowId, counts);
    });
    const stories = new Map<string, (ids: Ids) => Story>();
    const keyOfTask = new Map<string, string>();
    const storyOf = (taskId: string, requestId: unknown): Story => stories.get(keyOfTask.get(taskId) ?? '')?.({ taskId, contextId: `C-${taskId}`, requestId }) ?? { sse: [] };
    const agent = await startScriptedAgent({
      SendMessage: (params, call) => {
        const key = String(params.message.parts[0].text);
        const taskId = `T-${key}-${call.count}`;
        keyOfTask.set(taskId, key);
        return { result: { task: task(taskId, 'SUBMITTED', { contextId: `C-${taskId}`, history: [params.message] }) } };
      },
      SubscribeToTask: (params, call) => {
        const story = storyOf(String(params.id), call.id);
        return { sse: [taskEvent(task(String(params.id), 'WORKING', { contextId: `C-${params.id}` })), ...story.sse], endAfter: story.endAfter ?? 'hang' };
      },
      GetTask: (params) => ({ result: readAnswer(String(params.id), `C-${params.id}`) }),
    });
    const producer = createProducer({ addressPolicy: { allowLoopback: true }, redis: redisUrl, prefix });
    const fleet = await startTestFleet({ redisUrl, prefix, reconcileIntervalMs: 60_000, lockDurationMs: 30_000, ...fleetOptions });
    return new PairRig(prefix, monitor, calls, stories, keyOfTask, agent, producer, fleet);
  }

  /** Runs one delegation whose stream tells `story`; resolves once its first attempt satisfies `done` (default COMPLETED). */
  async run(key: string, story: (ids: Ids) => Story, done: (view: DelegationView) => boolean = (view) => view.state === 'COMPLETED'): Promise<Outcome> {
    this.stories.set(key, story);
    const { id } = await this.producer.delegate({ agent: this.agent.cardUrl, text: key, idempotencyKey: `${this.prefix}-${key}` });
    const [delegationId] = await this.producer.journal.delegationIds(id);
    const ref = { workflowId: id, delegationId: delegationId! };
    const view = await eventually(async () => {
      const current = await this.producer.journal.getDelegationView(ref);
      return current && done(current) && current;
    }, `${key}: the attempt reached its expected state`, 30_000);
    const leaseKey = this.producer.journal.keys.followLease(ref.workflowId, ref.delegationId);
    const redis = this.producer.journal.redis;
    const leaseHeld = await eventually(async () => ((await redis.exists(leaseKey)) === 0 ? 'free' : undefined), 'lease given back', 1_500).then(
      () => false,
      () => true,
    );
    const artifactBytes = view.artifacts.reduce((sum, artifact) => sum + artifactByteSize(artifact), 0);
    const taskIds = new Set([...this.keyOfTask].filter(([, of]) => of === key).map(([taskId]) => taskId));
    return {
      key,
      normal: normalOf(view),
      calls: { ...this.calls.get(id) },
      sendMessages: this.agent.calls('SendMessage').filter((request) => request.params.message.parts[0].text === key).length,
      getTasks: this.agent.calls('GetTask').filter((request) => taskIds.has(String(request.params.id))).length,
      leaseHeld,
      artifactBytes,
    };
  }

  /** `count` delegations, `story(index)` each, 25 at a time. */
  async runMany(tag: string, count: number, story: (index: number) => (ids: Ids) => Story): Promise<Outcome[]> {
    const outcomes: Outcome[] = [];
    for (let start = 0; start < count; start += 25) {
      const batch = Array.from({ length: Math.min(25, count - start) }, (_, offset) => this.run(`${tag}-${start + offset}-${++this.counter}`, story(start + offset)));
      outcomes.push(...(await Promise.all(batch)));
    }
    return outcomes;
  }

  /** `durable_a2a_transitions_total{state, source: stream or get-task}` of the rig's fleet so far (a finished status after appended chunks comes from the full read). */
  async transitions(state: string): Promise<number> {
    const values = (await this.fleet.metrics.transitions.get()).values;
    return values.filter((value) => value.labels.state === state && (value.labels.source === 'stream' || value.labels.source === 'get-task')).reduce((sum, value) => sum + value.value, 0);
  }

  async close(): Promise<void> {
    this.monitor.disconnect();
    await this.fleet.close();
    await this.agent.close();
    await this.producer.close();
  }
}
