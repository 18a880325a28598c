/**
 * A part of the attempt's result we refused over a limit (field case A32, docs/delegation-core.md "A refused part of
 * the result"): a durable fact of the attempt, journaled on the row (`refusedResult`, noteRefusedResult-1.lua) when
 * the refusal happens, until a full read shows the result. Every finishing path of the table is judged here, after
 * its row (`transition`), so no row can forget it: a COMPLETED that would be written without a result read in full
 * since the refusal is never a plain success.
 *   - a finished status streamed or pushed (a partial view): its artifact update is journaled, the status held for
 *     one full read (which decides: its artifacts, or a person);
 *   - a full read (GetTask, ListTasks with artifacts, a CancelTask or reply answer) COMPLETED with artifacts of its
 *     own, within limits: the result is shown whole, written as read;
 *   - any other COMPLETED (a full read without artifacts, a streamed status kept after a read, our own outcome):
 *     AMBIGUOUS `LIMIT_EXCEEDED`, a person decides (the agent may have done the work; never re-delegated blind).
 * Pure; the happy path (no refusal journaled) passes every step through unchanged.
 */
import { journalStateOf } from '@durable-a2a/shared/pure';
import type { TaskState } from '@durable-a2a/a2a';
import type { DelegationRecord, RecordedError } from '@durable-a2a/shared';
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
export function refusalOf(refused: RecordedError): Unacceptable {
  return { code: 'LIMIT_EXCEEDED', message: refused.message, ...(refused.limit ? { limit: refused.limit } : {}) };
}

const isCompleted = (state: TaskState): boolean => journalStateOf(state) === 'COMPLETED';

/** Whether a write would finish the row COMPLETED, and whether it shows the result whole (a full read with artifacts). */
function completes(write: Write): 'no' | 'shown' | 'unshown' {
  switch (write.kind) {
    case 'snapshot':
      return !isCompleted(write.task.status.state) ? 'no' : write.task.artifacts?.length ? 'shown' : 'unshown';
    case 'events':
      return write.responses.some((response) => ('statusUpdate' in response && isCompleted(response.statusUpdate.status.state)) || ('task' in response && isCompleted(response.task.status.state))) ? 'unshown' : 'no';
    case 'outcome':
      return write.state === 'COMPLETED' ? 'unshown' : 'no';
    default:
      return 'no';
  }
}

/**
 * `step` judged against the row's journaled refusal (see the module header), or `undefined` when it stands as it is
 * (no refusal journaled, or no write finishing COMPLETED without showing the result).
 */
export function refusedResultJudged(record: DelegationRecord, observation: Observation, step: Step): Step | undefined {
  const refused = record.refusedResult;
  if (!refused || step.write === undefined) return undefined;
  const writes: readonly Write[] = Array.isArray(step.write) ? (step.write as readonly Write[]) : [step.write as Write];
  const at = writes.findIndex((write) => completes(write) === 'unshown');
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
  const where = `a part of the result of task ${record.taskId ?? '(unbound)'} (the task COMPLETED, and no full read since shows its result)`;
  return { ...withWrites(before), next: overLimit(unacceptable, where) };
}

/** The `write` of a step from a list of at most two writes. */
function withWrites(writes: readonly Write[]): Pick<Step, 'write'> {
  if (writes.length === 0) return {};
  if (writes.length === 1) return { write: writes[0]! };
  return { write: [writes[0]!, writes[1]!] };
}
