/**
 * Wire values of the round-3 deviation kinds (what an answer proves): the
 * task's timeline under repeated AUTH_REQUIRED challenges and connection
 * recycling, status messages (message-less after ones with a message, bare
 * strings), metadata-heavy artifacts, the decoy task carried under another
 * request's id, and the timed events of a stream. Pure; agent.ts and
 * stream.ts do the I/O.
 */
import { ALWAYS, deviationOf, type Behaviour, type TaskStateName } from './grammar.ts';

/** Our clock (ms) of each state of the task: WORKING (or the first AUTH_REQUIRED) from `workingAtMs`, the final state from `finalAtMs`. */
export function timeline(behaviour: Behaviour, createdAtMs: number): { workingAtMs: number; finalAtMs: number } {
  const recycling = deviationOf(behaviour, 'recycling');
  if (recycling) return { workingAtMs: createdAtMs + recycling.updateEveryMs, finalAtMs: createdAtMs + recycling.workMs };
  const workingAtMs = createdAtMs + Math.floor(behaviour.story.workMs / 2);
  const auth = deviationOf(behaviour, 'authChallenges');
  if (auth) return { workingAtMs, finalAtMs: auth.times >= ALWAYS ? Number.MAX_SAFE_INTEGER : workingAtMs + auth.times * auth.intervalMs };
  return { workingAtMs, finalAtMs: createdAtMs + behaviour.story.workMs };
}

/** The state between WORKING's start and the end: AUTH_REQUIRED when the agent keeps asking for credentials. */
export const middleState = (behaviour: Behaviour): TaskStateName => (deviationOf(behaviour, 'authChallenges') ? 'AUTH_REQUIRED' : 'WORKING');

/** The instant (our clock) of the latest AUTH_REQUIRED challenge at `nowMs`, and its round (0-based). */
export function latestChallenge(behaviour: Behaviour, workingAtMs: number, nowMs: number): { atMs: number; round: number } {
  const auth = deviationOf(behaviour, 'authChallenges');
  const interval = auth?.intervalMs ?? 1;
  const round = Math.max(0, Math.min(Math.floor((nowMs - workingAtMs) / interval), (auth?.times ?? 1) - 1));
  return { atMs: workingAtMs + round * interval, round };
}

/** The sign-in text of challenge `round`. */
export const challengeText = (runId: string, round: number) => `sign in at https://auth.invalid/${runId}?round=${round}`;

/** The text of WORKING status `index` (1-based) when the agent reports progress in status messages. */
export const progressText = (runId: string, index: number) => `Generating response ${index}... (${runId})`;

/**
 * The text of the final status's message as the agent writes it, or undefined when the final status carries none:
 * COMPLETED carries the result only without artifact chunks; FAILED and REJECTED carry their reason; a bare-string
 * agent always writes one; an agent whose statuses replace their messages writes none at the end.
 */
export function finalStatusText(runId: string, behaviour: Behaviour): string | undefined {
  const { final, chunks } = behaviour.story;
  if (deviationOf(behaviour, 'statusMessages')) return undefined;
  const base = final === 'COMPLETED' ? (chunks === 0 ? `result-${runId}` : undefined) : `${final.toLowerCase()}-${runId}`;
  const bare = deviationOf(behaviour, 'bareMessage');
  if (!bare) return base;
  const text = base ?? `done-${runId}`;
  return bare.text === 'plain' ? text : bare.text === 'unicode' ? `${text} — ✓ ünïcödé 🎉` : `${text} ${'detail '.repeat(300).trim()}`;
}

/** A status message as this agent writes it: a Message (spec §5.5), or a bare string when the behaviour says so for `state`. */
export function statusMessageValue(behaviour: Behaviour, state: TaskStateName, text: string, message: Record<string, unknown>): unknown {
  const bare = deviationOf(behaviour, 'bareMessage');
  const final = state === behaviour.story.final;
  return bare && (bare.on === 'every' || final) ? text : message;
}

/** The extra metadata-heavy artifacts of a COMPLETED task (artifactMetadata), bytes split evenly. */
export function metadataArtifacts(behaviour: Behaviour): Record<string, unknown>[] {
  const deviation = deviationOf(behaviour, 'artifactMetadata');
  if (!deviation || behaviour.story.final !== 'COMPLETED') return [];
  const each = Math.max(1, Math.floor(deviation.bytes / deviation.artifacts));
  return Array.from({ length: deviation.artifacts }, (_, index) => {
    const filler = 'm'.repeat(each);
    const artifact: Record<string, unknown> = { artifactId: `meta-${index + 1}`, parts: [{ text: '' }] };
    if (deviation.where === 'metadata') artifact.metadata = { blob: filler };
    if (deviation.where === 'name') artifact.name = filler;
    if (deviation.where === 'description') artifact.description = filler;
    if (deviation.where === 'partMetadata') artifact.parts = [{ text: '', metadata: { blob: filler } }];
    return artifact;
  });
}

/** A task that claims our context and our message in its history under another task id (sent with another request's id). */
export function decoyTask(runId: string, ours: { contextId: string; message: Record<string, unknown> }, state: string): Record<string, unknown> {
  return {
    id: `decoy-task-${runId}`,
    contextId: ours.contextId,
    status: { state, timestamp: new Date().toISOString() },
    artifacts: [{ artifactId: 'a1', parts: [{ text: `FOREIGN-${runId}` }] }],
    history: [ours.message],
  };
}

/** One event of a timed stream: sent at `atMs` (our clock). */
export interface Timed<T> {
  atMs: number;
  payload: T;
}

/** Upper bound on the challenges one stream carries (the agent's close ends it sooner). */
const MAX_CHALLENGES = 200;

/**
 * The status updates a timed task sends from `nowMs` on: the recycling task's WORKING every `updateEveryMs`, or the
 * AUTH_REQUIRED challenges every `intervalMs`; then the final status. Empty for other behaviours.
 */
export function timedStatuses(behaviour: Behaviour, task: { workingAtMs: number; finalAtMs: number }, nowMs: number): Timed<TaskStateName>[] {
  const recycling = deviationOf(behaviour, 'recycling');
  const auth = deviationOf(behaviour, 'authChallenges');
  if (!recycling && !auth) return [];
  const every = recycling?.updateEveryMs ?? auth!.intervalMs;
  const state: TaskStateName = recycling ? 'WORKING' : 'AUTH_REQUIRED';
  const statuses: Timed<TaskStateName>[] = [];
  for (let at = task.workingAtMs, count = 0; at < task.finalAtMs && count < MAX_CHALLENGES; at += every, count++) {
    if (at > nowMs) statuses.push({ atMs: at, payload: state });
  }
  if (task.finalAtMs < Number.MAX_SAFE_INTEGER) statuses.push({ atMs: task.finalAtMs, payload: behaviour.story.final });
  return statuses;
}
