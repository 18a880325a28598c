/**
 * Wire values of the fuzz agent: the task it keeps for our message (its
 * truth), and that truth written as a deviating agent writes it (spellings,
 * clocks, shapes). Pure functions; test/fuzz/agent.ts does the I/O.
 */
import { challengeText, finalStatusText, type Timed, latestChallenge, metadataArtifacts, middleState, progressText, statusMessageValue, timedStatuses } from './answers.ts';
import { deviationOf, spellState, stamp, type Behaviour, type TaskStateName } from './grammar.ts';

/** The agent's task for our message: ids, and when (our clock, ms) each state begins. */
export interface AgentTask {
  id: string;
  contextId: string;
  /** The message that created it, as received (kept in `history`). */
  message: Record<string, unknown>;
  createdAtMs: number;
  workingAtMs: number;
  finalAtMs: number;
}

/** Ids the agent uses for another client's task: never ours, never to be adopted. */
export const foreignIds = (runId: string) => ({ taskId: `foreign-task-${runId}`, contextId: `foreign-ctx-${runId}`, text: `FOREIGN-${runId}` });

/** The text of our task's artifact (or final message); a foreign text anywhere in the journal is an adoption. */
export const resultText = (runId: string) => `result-${runId}`;

/** The task's state at `nowMs` (our clock). */
export function stateAt(task: AgentTask, behaviour: Behaviour, nowMs: number): TaskStateName {
  if (nowMs >= task.finalAtMs) return behaviour.story.final;
  return nowMs >= task.workingAtMs ? middleState(behaviour) : 'SUBMITTED';
}

/** Writes states in the behaviour's spelling styles, in turn (proto when none). */
export function speller(behaviour: Behaviour): (state: TaskStateName) => string {
  const styles = deviationOf(behaviour, 'stateSpelling')?.styles ?? ['proto'];
  let next = 0;
  return (state) => spellState(state, styles[next++ % styles.length]!);
}

/** The status timestamp of `state` as the agent writes it (R27: a terminal stamped before WORKING when asked). */
export function statusStamp(task: AgentTask, behaviour: Behaviour, state: TaskStateName, nowMs = Date.now()): string | undefined {
  const clock = deviationOf(behaviour, 'clock');
  const middle = state === 'AUTH_REQUIRED' ? latestChallenge(behaviour, task.workingAtMs, nowMs).atMs : deviationOf(behaviour, 'recycling') ? Math.min(nowMs, task.finalAtMs) : task.workingAtMs;
  const at = state === 'SUBMITTED' ? task.createdAtMs : state === 'WORKING' || state === 'AUTH_REQUIRED' ? middle : task.finalAtMs;
  const shifted = clock?.terminalBeforeWorking && state === behaviour.story.final ? task.workingAtMs - 2_000 : at;
  return stamp(shifted, clock);
}

const agentMessage = (runId: string, text: string, task: AgentTask) => ({
  messageId: `agent-${runId}-${text.length}`,
  role: 'ROLE_AGENT',
  parts: [{ text }],
  taskId: task.id,
  contextId: task.contextId,
});

/** Our task as a Task object (spec §5.5) in `state`, as this agent writes it. */
export function wireTask(runId: string, task: AgentTask, behaviour: Behaviour, state: TaskStateName, spell = speller(behaviour), nowMs = Date.now()): Record<string, unknown> {
  const value: Record<string, unknown> = { id: task.id, contextId: task.contextId, status: wireStatus(runId, task, behaviour, state, spell, nowMs), history: [task.message] };
  const artifacts = state === 'COMPLETED' && behaviour.story.chunks > 0 ? [{ artifactId: 'a1', parts: [{ text: resultText(runId) }] }] : [];
  if (state === 'COMPLETED') artifacts.push(...(metadataArtifacts(behaviour) as typeof artifacts));
  if (artifacts.length > 0) value.artifacts = artifacts;
  return value;
}

/** The text of the message of a status in `state` at `nowMs`, or undefined when that status carries none. */
function statusText(runId: string, task: AgentTask, behaviour: Behaviour, state: TaskStateName, nowMs: number): string | undefined {
  if (state === behaviour.story.final) return finalStatusText(runId, behaviour);
  if (state === 'AUTH_REQUIRED') return challengeText(runId, latestChallenge(behaviour, task.workingAtMs, nowMs).round);
  const progress = deviationOf(behaviour, 'statusMessages');
  if (state === 'WORKING' && progress) return progress.bareLast ? undefined : progressText(runId, progress.progress);
  return deviationOf(behaviour, 'bareMessage')?.on === 'every' ? `${state.toLowerCase()}-${runId}` : undefined;
}

/** A TaskStatus (spec §5.5) in `state` as this agent writes it: spelled, stamped, with its message (or none). */
export function wireStatus(runId: string, task: AgentTask, behaviour: Behaviour, state: TaskStateName, spell = speller(behaviour), nowMs = Date.now(), text = statusText(runId, task, behaviour, state, nowMs)): Record<string, unknown> {
  const status: Record<string, unknown> = { state: spell(state) };
  const timestamp = statusStamp(task, behaviour, state, nowMs);
  if (timestamp) status.timestamp = timestamp;
  if (text !== undefined) status.message = statusMessageValue(behaviour, state, text, agentMessage(runId, text, task));
  return status;
}

/** Another client's task: other id, other context, a FAILED state and a foreign artifact. */
export function foreignTask(runId: string, behaviour: Behaviour): Record<string, unknown> {
  const ids = foreignIds(runId);
  return {
    id: ids.taskId,
    contextId: ids.contextId,
    status: { state: speller(behaviour)('FAILED'), timestamp: new Date().toISOString() },
    artifacts: [{ artifactId: 'a1', parts: [{ text: ids.text }] }],
    history: [{ messageId: `someone-else-${runId}`, role: 'ROLE_USER', parts: [{ text: 'not yours' }] }],
  };
}

/** A stream event payload (a StreamResponse, spec §5.5), before framing. */
export type StreamPayload = { task: Record<string, unknown> } | { statusUpdate: Record<string, unknown> } | { artifactUpdate: Record<string, unknown> };

/**
 * The events a subscription opened at `nowMs` carries: the snapshot, then
 * WORKING (when still SUBMITTED), the artifact chunks and the terminal status.
 */
export function streamEvents(runId: string, task: AgentTask, behaviour: Behaviour, nowMs: number): Timed<StreamPayload>[] {
  const spell = speller(behaviour);
  const current = stateAt(task, behaviour, nowMs);
  const ids = { taskId: task.id, contextId: task.contextId };
  const status = (state: TaskStateName, at: number, text?: string) => ({ statusUpdate: { ...ids, status: wireStatus(runId, task, behaviour, state, spell, at, text) } });
  const first: StreamPayload = deviationOf(behaviour, 'statusFirst') ? statusFirstEvent(status(current, nowMs).statusUpdate, behaviour) : { task: wireTask(runId, task, behaviour, current, spell, nowMs) };
  const events: Timed<StreamPayload>[] = [{ atMs: nowMs, payload: first }];
  const timed = timedStatuses(behaviour, task, nowMs);
  if (timed.length > 0) return [...events, ...timed.map(({ atMs, payload }) => ({ atMs, payload: status(payload, atMs) }))];
  if (current === behaviour.story.final) return events;
  const later = (payload: StreamPayload) => events.push({ atMs: task.finalAtMs, payload });
  const progress = deviationOf(behaviour, 'statusMessages');
  if (current === 'SUBMITTED' && !progress) later(status('WORKING', task.workingAtMs));
  for (let index = 1; index <= (progress?.progress ?? 0); index++) later(status('WORKING', task.workingAtMs, progressText(runId, index)));
  if (progress?.bareLast) later(status('WORKING', task.workingAtMs, undefined));
  const { final, chunks } = behaviour.story;
  if (final === 'COMPLETED') {
    const text = resultText(runId);
    const size = Math.ceil(text.length / Math.max(1, chunks));
    for (let index = 0; index < chunks; index++) {
      const part = text.slice(index * size, (index + 1) * size);
      later({ artifactUpdate: { ...ids, artifact: { artifactId: 'a1', parts: [{ text: part }] }, append: index > 0, lastChunk: index === chunks - 1 } });
    }
    for (const artifact of metadataArtifacts(behaviour)) later({ artifactUpdate: { ...ids, artifact, append: false, lastChunk: true } });
  }
  later(status(final, task.finalAtMs));
  return events;
}

/** The first event of a status-first stream: our task's status update without history, its context ours or omitted. */
function statusFirstEvent(update: Record<string, unknown>, behaviour: Behaviour): StreamPayload {
  if (deviationOf(behaviour, 'statusFirst')?.context === 'omitted') {
    const { contextId: _omitted, ...rest } = update;
    return { statusUpdate: rest };
  }
  return { statusUpdate: update };
}


/** Events naming another task (foreignTask at 'stream'): its FAILED status and its artifact. */
export function foreignEvents(runId: string, behaviour: Behaviour): StreamPayload[] {
  const ids = foreignIds(runId);
  const refs = { taskId: ids.taskId, contextId: ids.contextId };
  return [
    { artifactUpdate: { ...refs, artifact: { artifactId: 'a1', parts: [{ text: ids.text }] }, append: false, lastChunk: true } },
    { statusUpdate: { ...refs, status: { state: speller(behaviour)('FAILED'), timestamp: new Date().toISOString() } } },
  ];
}

/** Rewrites a stream payload in the behaviour's stream shape (whole tasks, 0.3 kind tags) and Task `kind` policy. */
export function shapeEvent(payload: StreamPayload, behaviour: Behaviour, snapshot: () => Record<string, unknown>): unknown {
  const shape = deviationOf(behaviour, 'streamShape')?.events;
  if (shape === 'wholeTasks') return 'task' in payload ? payload : { task: snapshot() };
  if (shape === 'kindTagged') {
    if ('task' in payload) return { ...payload.task, kind: 'task' };
    if ('statusUpdate' in payload) return { ...payload.statusUpdate, kind: 'status-update' };
    return { ...payload.artifactUpdate, kind: 'artifact-update' };
  }
  return payload;
}

/** The SendMessage result for `value` (a Task) in the behaviour's result shape. */
export function sendResult(value: Record<string, unknown>, behaviour: Behaviour): unknown {
  switch (deviationOf(behaviour, 'resultShape')?.send ?? 'wrapped') {
    case 'wrapped':
      return { task: value };
    case 'bare':
      return value;
    case 'bareWithKind':
      return { ...value, kind: 'task' };
    case 'wrappedWithKind':
      return { task: { ...value, kind: 'task' } };
    case 'extraFields':
      return { task: { ...value, vendorTrace: { spanId: 'abc', attempts: [1, 2] }, priority: 3 }, servedBy: 'replica-2' };
  }
}

/** The JSON-RPC id the agent answers with, for a request id (rpcId deviation at `method`, else the request's). */
export function answerId(requestId: unknown, behaviour: Behaviour, method: string): unknown {
  const envelope = deviationOf(behaviour, 'envelopeId');
  if (envelope?.site === method) return envelope.id === 'null' ? null : envelope.id === 'missing' ? undefined : otherId(requestId);
  const deviation = deviationOf(behaviour, 'rpcId');
  if (!deviation || deviation.method !== method) return requestId ?? null;
  switch (deviation.id) {
    case 'missing':
      return undefined;
    case 'null':
      return null;
    case 'other':
      return otherId(requestId);
    case 'stringified':
      return typeof requestId === 'number' ? String(requestId) : `${String(requestId)} `;
  }
}

/** Another request's id (of the same type as ours). */
const otherId = (requestId: unknown): unknown => (typeof requestId === 'number' ? requestId + 1000 : `other-${String(requestId)}`);
