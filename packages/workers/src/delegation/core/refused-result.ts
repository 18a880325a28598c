/**
 * A part of the attempt's result we refused over a limit (field case A32, docs/delegation-core.md "A refused part of
 * the result"): a durable fact of the attempt, journaled on the row (`refusedResult`, noteRefusedResult-1.lua) by
 * every row that refuses an answer about our task over a limit (`refusalNoted`: a stream event or a resubscription's
 * snapshot, a read, a SendMessage answer; the push webhook writes the same fact), until a full read shows the result.
 * Every finishing path of the table is judged here, after its row (`transition`), so no row can forget it: a
 * COMPLETED that would be written without a result read in full since the refusal is never a plain success.
 *   - a finished status streamed or pushed (a partial view): its artifact update is journaled, the status held for
 *     one full read (which decides: its artifacts, or a person);
 *   - a full read (GetTask, ListTasks with artifacts, a CancelTask or reply answer) COMPLETED that shows the result
 *     (`refusedResultShown`: artifacts of its own, every refused artifact's id among them when the refusals knew
 *     them): written as read;
 *   - any other COMPLETED (a full read without artifacts or without a refused artifact, a streamed status kept after
 *     a read, our own outcome): AMBIGUOUS `LIMIT_EXCEEDED`, a person decides (the agent may have done the work; never
 *     re-delegated blind).
 * Pure; the happy path (no refusal journaled) passes every step through unchanged.
 */
import { journalStateOf, refusedArtifactsMissing, refusedResultShown } from '@durable-a2a/shared/pure';
import type { Artifact, TaskState } from '@durable-a2a/a2a';
import type { DelegationRecord, RefusedResult } from '@durable-a2a/shared';
import type { Next } from './next.ts';
import type { Observation, Unacceptable } from './observation.ts';
import type { Step, Write } from './transitions.ts';

/** The answer arrived over a limit: a person decides (the agent may have done the work; re-delegating would do it twice). */
export const overLimit = (unacceptable: Unacceptable, where: string): Next => ({
  kind: 'needs-person',
  code: 'LIMIT_EXCEEDED',
  message: `${where} exceeded the ${unacceptable.limit} limit (${unacceptable.message}); the agent may have done the work, so the step is not re-delegated blind`,
  delivery: 'received',
  ...(unacceptable.limit ? { limit: unacceptable.limit } : {}),
});

/** The journaled refusal as the table's `Unacceptable` (what `read-once` carries and `overLimit` names). */
export function refusalOf(refused: RefusedResult): Unacceptable {
  return { code: 'LIMIT_EXCEEDED', message: refused.message, ...(refused.limit ? { limit: refused.limit } : {}) };
}

/** The write that journals a refusal over a limit (`refusedResult`): every row that refuses an answer about our task writes it. */
export function refusalNoted(unacceptable: Unacceptable): Write {
  const { message, limit, artifactId } = unacceptable;
  return { kind: 'note-refused-result', refusal: { message, ...(limit !== undefined ? { limit } : {}), ...(artifactId !== undefined ? { artifactId } : {}) } };
}

/**
 * Whether a full read's finished `artifacts` show the result the journaled refusal left out (`refusedResultShown`),
 * and in words what is missing when they do not (for the person's message).
 */
export function resultShown(refused: RefusedResult, artifacts: readonly Artifact[] | undefined): { shown: true } | { shown: false; missing: string } {
  if (refusedResultShown(refused, artifacts)) return { shown: true };
  const ids = refusedArtifactsMissing(refused, artifacts);
  const missing = !artifacts?.length
    ? 'without a result of its own'
    : refused.artifactIdsLost
      ? 'and more artifacts were refused than the journal keeps ids of'
      : `without the refused artifact${ids.length > 1 ? 's' : ''} ${ids.join(', ')}`;
  return { shown: false, missing };
}

const isCompleted = (state: TaskState): boolean => journalStateOf(state) === 'COMPLETED';

type Completes = 'no' | 'shown' | 'unshown';

/**
 * Whether a write would finish the row COMPLETED, and whether it shows the result (a full read whose artifacts show
 * it, `resultShown`), by write kind: a mapped type, so a new write kind is a compile error here until it says.
 */
const COMPLETES: { [K in Write['kind']]: (write: Extract<Write, { kind: K }>, refused: RefusedResult) => Completes } = {
  snapshot: (write, refused) => (!isCompleted(write.task.status.state) ? 'no' : resultShown(refused, write.task.artifacts).shown ? 'shown' : 'unshown'),
  // A stream's or push's events are a partial view: a COMPLETED among them never shows the result.
  events: (write) => (write.responses.some((response) => ('statusUpdate' in response && isCompleted(response.statusUpdate.status.state)) || ('task' in response && isCompleted(response.task.status.state))) ? 'unshown' : 'no'),
  outcome: (write) => (write.state === 'COMPLETED' ? 'unshown' : 'no'),
  'note-send-error': () => 'no',
  'note-unreachable': () => 'no',
  'note-slot-wait': () => 'no',
  'note-protocol-error': () => 'no',
  'note-refused-result': () => 'no',
  'note-not-found': () => 'no',
  'release-for-resend': () => 'no',
  'mark-reply': () => 'no',
  'expire-question': () => 'no',
  'record-effect': () => 'no',
};

/** `COMPLETES` for one write (the lookup typed by the write's own kind). */
function completes(write: Write, refused: RefusedResult): Completes {
  return (COMPLETES[write.kind] as (write: Write, refused: RefusedResult) => Completes)(write, refused);
}

/**
 * `step` judged against the row's journaled refusal (see the module header), or `undefined` when it stands as it is
 * (no refusal journaled, or no write finishing COMPLETED without showing the result).
 */
export function refusedResultJudged(record: DelegationRecord, observation: Observation, step: Step): Step | undefined {
  const refused = record.refusedResult;
  if (!refused || step.write === undefined) return undefined;
  const writes: readonly Write[] = Array.isArray(step.write) ? (step.write as readonly Write[]) : [step.write as Write];
  const at = writes.findIndex((write) => completes(write, refused) === 'unshown');
  if (at < 0) return undefined;
  const before = writes.slice(0, at);
  const unacceptable = refusalOf(refused);
  const ending = writes[at]!;
  if (ending.kind === 'events' && (observation.kind === 'stream-event' || observation.kind === 'push-received')) {
    // A streamed (or pushed) COMPLETED is a partial view: its artifact update is journaled, one full read decides.
    const [first, second] = ending.responses;
    const kept: Write[] = [...before, ...(second ? [{ kind: 'events', responses: [first] } as Write] : [])];
    const next: Next = { kind: 'read-once', why: `the agent says its task COMPLETED after we refused a part of its result (${refused.message})`, refused: unacceptable };
    return { ...withWrites(kept), next };
  }
  const judged = ending.kind === 'snapshot' ? resultShown(refused, ending.task.artifacts) : undefined;
  const read = judged && !judged.shown ? `; the full read COMPLETED ${judged.missing}` : '';
  const where = `a part of the result of task ${record.taskId ?? '(unbound)'} (the task COMPLETED, and no full read since shows its result${read})`;
  return { ...withWrites(before), next: overLimit(unacceptable, where) };
}

/** The `write` of a step from a list of at most two writes. */
function withWrites(writes: readonly Write[]): Pick<Step, 'write'> {
  if (writes.length === 0) return {};
  if (writes.length === 1) return { write: writes[0]! };
  return { write: [writes[0]!, writes[1]!] };
}
