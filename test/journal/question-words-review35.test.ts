/**
 * review35 (question35): two cases of a question's words.
 * - `bareAgain` (applyStatus-5.lua) keeps the row's question only on a bare re-read of the SAME parked state (the
 *   script's header, docs/people.md): an AUTH_REQUIRED without a message after an INPUT_REQUIRED's question (no
 *   timestamps: the agent sends none) is another status, and the input question is not shown as its question.
 * - A36 on a read after a stream: an agent Message of our task on the stream, then a later WORKING without a message
 *   the row recorded from that stream, then a bare INPUT_REQUIRED seen only by a read whose history ends with that
 *   Message: the Message came before a later status the row recorded, so it is never the question's words.
 */
import { describe, expect, it } from 'vitest';
import { Journal, StreamQuestionWords, applyStreamResponse, applyTask } from '@durable-a2a/shared';
import type { Message, StreamResponse, Task } from '@durable-a2a/a2a';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { intentRow } from '../harness/journal-rows.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
let run = 0;

/** A row bound to T1 (WORKING) and an applier of one stream's events to it. */
async function scene() {
  const journal = new Journal(redis(), { prefix: `words-r35-${++run}`, retentionMs: 60_000 });
  const workflowId = `wf-r35-${run}`;
  const ref = { workflowId, delegationId: 'main.1' };
  await journal.createWorkflow(workflowId, { state: 'RUNNING' }, intentRow(workflowId));
  await applyTask(journal, ref, { id: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_WORKING' } } as Task, { snapshot: true });
  const record = { ...(await journal.getDelegation(ref))!, taskId: 'T1' };
  const apply = async (response: StreamResponse) => applyStreamResponse(journal, record, response, { stream: 's1', held: await journal.getDelegation(ref) });
  const row = async () => (await journal.getDelegation(ref))!;
  return { journal, ref, apply, row };
}

const agentMessage = (messageId: string, text: string) => ({ messageId, role: 'ROLE_AGENT', taskId: 'T1', contextId: 'C1', parts: [{ text }] }) as Message;
const status = (state: string, extra: object = {}) => ({ statusUpdate: { taskId: 'T1', contextId: 'C1', status: { state, ...extra } } }) as StreamResponse;

describe('question words (review35)', () => {
  it('AUTH_REQUIRED without a message after INPUT_REQUIRED with one: the input question is not kept (failed before the fix)', async () => {
    const { apply, row } = await scene();
    await apply(status('TASK_STATE_INPUT_REQUIRED', { message: agentMessage('q1', 'Which date?') }));
    expect((await row()).question?.messageId).toBe('q1');
    await apply(status('TASK_STATE_AUTH_REQUIRED'));
    const after = await row();
    expect(after.state).toBe('AUTH_REQUIRED');
    expect(after.question?.messageId).not.toBe('q1');
    expect(after.statusMessage?.messageId).not.toBe('q1');
  });

  // Failed before question36 (an `it.fails` of review35): the row kept no cut for a Message seen before a later bare
  // status. Now a status applied records the last agent message it follows in `questionWordsAfter`.
  it('A36: a stream Message before a later bare WORKING is not the question of a bare INPUT_REQUIRED a read shows (failed before the fix)', async () => {
    const { journal, ref, apply, row } = await scene();
    const words = new StreamQuestionWords(() => ({ taskId: 'T1', contextId: 'C1' }));
    const progress = agentMessage('m1', 'Generating response...');
    await apply(words.wordsAfter(progress) ?? { message: progress });
    await apply(words.withWords(status('TASK_STATE_WORKING', { timestamp: '2026-12-07T10:00:01Z' })));
    const history = [{ messageId: 'ours', role: 'ROLE_USER', parts: [{ text: 'book' }] } as Message, progress];
    await applyTask(journal, ref, { id: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_INPUT_REQUIRED', timestamp: '2026-12-07T10:00:02Z' }, history } as Task, { snapshot: true, held: await row() });
    const after = await row();
    expect(after.state).toBe('INPUT_REQUIRED');
    expect((after.question?.parts ?? []).map((part) => part.text ?? '').join('')).not.toContain('Generating response');
  });
});

describe('question words cut from the caller’s copy (question36, review35 suspicion)', () => {
  // An unguarded read's words were cut from the caller's copy of the row: a WORKING with a progress message pushed
  // after the copy was read (an unfenced writer) was not in it, so the progress message became the words of a bare
  // INPUT_REQUIRED the read showed. The script now checks the copy's cut against the row as stored.
  it('a progress message the row recorded after the caller read it is not the question of a read with the stale copy (failed before the fix)', async () => {
    const { journal, ref, row } = await scene();
    const stale = await row();
    const progress = agentMessage('p1', 'Generating response...');
    await applyStreamResponse(journal, { ...stale, taskId: 'T1' }, status('TASK_STATE_WORKING', { message: progress }));
    expect((await row()).statusMessage?.messageId).toBe('p1');
    const history = [{ messageId: 'ours', role: 'ROLE_USER', parts: [{ text: 'book' }] } as Message, progress];
    const task = { id: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_INPUT_REQUIRED' }, history } as Task;
    await applyTask(journal, ref, task, { snapshot: true, held: stale });
    const after = await row();
    expect(after.state).toBe('INPUT_REQUIRED');
    expect((after.question?.parts ?? []).map((part) => part.text ?? '').join('')).not.toContain('Generating response');
    // A read with the row as stored takes the words after the cut: a question the agent sent since.
    const question = agentMessage('q1', 'Which date?');
    await applyTask(journal, ref, { ...task, history: [...history, question] } as Task, { snapshot: true, held: after });
    expect((await row()).question?.parts.map((part) => part.text).join('')).toBe('Which date?');
  });
});

describe('the cut of several ids (question36)', () => {
  it('ids that read as JSON or hold escapes: a read takes only the words after the latest of them', async () => {
    const { journal, ref, apply, row } = await scene();
    const words = new StreamQuestionWords(() => ({ taskId: 'T1', contextId: 'C1' }));
    const progress = agentMessage('["p"]', 'Generating response...');
    const said = agentMessage('a/b"c', 'Still on it');
    await apply(words.withWords(status('TASK_STATE_WORKING', { message: progress })));
    await apply(words.wordsAfter(said) ?? { message: said });
    await apply(words.withWords(status('TASK_STATE_WORKING', { timestamp: '2026-12-07T10:00:01Z' })));
    expect(JSON.parse((await row()).questionWordsAfter ?? '')).toEqual(['a/b"c', '["p"]']);
    // The same WORKING again after the same message on another stream: a duplicate (the cut is the row's newest already).
    const other = new StreamQuestionWords(() => ({ taskId: 'T1', contextId: 'C1' }));
    other.wordsAfter(said);
    const again = await applyStreamResponse(journal, { ...(await row()), taskId: 'T1' }, other.withWords(status('TASK_STATE_WORKING', { timestamp: '2026-12-07T10:00:01Z' })), { stream: 's2' });
    expect(again.status).toMatchObject({ applied: false, reason: 'duplicate' });
    const history = [{ messageId: 'ours', role: 'ROLE_USER', parts: [{ text: 'book' }] } as Message, progress, said];
    const parked = { id: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_INPUT_REQUIRED', timestamp: '2026-12-07T10:00:02Z' }, history } as Task;
    await applyTask(journal, ref, parked, { snapshot: true, held: await row() });
    expect((await row()).question).toBeUndefined();
    const question = agentMessage('q1', 'Which date?');
    await applyTask(journal, ref, { ...parked, history: [...history, question] } as Task, { snapshot: true, held: await row() });
    expect((await row()).question?.parts.map((part) => part.text).join('')).toBe('Which date?');
  });
});

describe('the cut written in one shape', () => {
  it('a single id is written as a JSON list of one; a row of an older release holding one id as it is is still read and merged', async () => {
    const { journal, ref, apply, row } = await scene();
    await apply(status('TASK_STATE_WORKING', { message: agentMessage('p1', 'Generating response...') }));
    await apply(status('TASK_STATE_WORKING', { timestamp: '2026-12-07T10:00:01Z' }));
    // The cleared progress message is the cut: a list of one, not the id as it is.
    expect((await row()).questionWordsAfter).toBe('["p1"]');
    // As an older release wrote a single id (the test writes the row's field directly): read as that one id.
    await redis().hset(journal.keys.delegation(ref.workflowId, ref.delegationId), 'questionWordsAfter', 'm0');
    expect((await row()).questionWordsAfter).toBe('m0');
    await apply(status('TASK_STATE_WORKING', { message: agentMessage('p2', 'Still on it'), timestamp: '2026-12-07T10:00:02Z' }));
    await apply(status('TASK_STATE_WORKING', { timestamp: '2026-12-07T10:00:03Z' }));
    expect(JSON.parse((await row()).questionWordsAfter ?? '')).toEqual(['p2', 'm0']);
  });
});
