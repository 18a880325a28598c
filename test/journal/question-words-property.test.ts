/**
 * Property (question35): a question whose words are in the agent's message(s) of the task, not in its status message.
 * Any order of what the agent sends on one stream (WORKING with or without a progress message, Message events of our
 * task or of another, INPUT_REQUIRED with or without a status message), then one GetTask read whose history is the
 * task's messages as an agent keeps them (ours first, the Message events and the status messages in order; whole, its
 * tail, or none). Whenever the row is parked: a status message is the question; otherwise the question's words are
 * the agent's own messages, never a progress message, another task's message, or a message sent before a later
 * WORKING (A36); words the stream gave stay through the read; the agent's words after the last status (the stream's, or
 * the read's history when every WORKING showed a message) are shown. Real redis-server, the journal's own scripts.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Journal, StreamQuestionWords, applyStreamResponse, applyTask } from '@durable-a2a/shared';
import type { Message, StreamResponse, Task } from '@durable-a2a/a2a';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { intentRow } from '../harness/journal-rows.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);

/** One thing the agent sends on the stream. */
type Sent = { working: boolean } | { say: 'ours' | 'other-task' | 'no-task' } | { ask: boolean };

const sentArbitrary: fc.Arbitrary<Sent> = fc.oneof(
  fc.record({ working: fc.boolean() }),
  { weight: 2, arbitrary: fc.record({ say: fc.constantFrom('ours' as const, 'ours' as const, 'other-task' as const, 'no-task' as const) }) },
  fc.record({ ask: fc.boolean() }),
);

const message = (messageId: string, text: string, taskId?: string): Message => ({ messageId, role: 'ROLE_AGENT', parts: [{ text }], contextId: 'C1', ...(taskId ? { taskId } : {}) }) as Message;
const textOf = (question: Message | undefined): string => (question?.parts ?? []).map((part) => part.text ?? '').join('');

describe('property: a question in the agent message(s) of the task', () => {
  it('the status message, else the agent words after the last status; never a progress message, another task’s, or one before a later WORKING', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(sentArbitrary, { minLength: 1, maxLength: 10 }), fc.constantFrom('whole', 'tail', 'none'), fc.option(fc.nat(10), { nil: undefined }), async (sent, historyKind, broke) => {
        // `broke`: the stream delivered only its first `broke` events (the rest the agent sent unseen: only the read
        // shows them); undefined: all of them.
        const delivered = broke ?? sent.length;
        const journal = new Journal(redis(), { prefix: `words${++run}`, retentionMs: 60_000 });
        const workflowId = `wf${run}`;
        const ref = { workflowId, delegationId: 'main.1' };
        await journal.createWorkflow(workflowId, { state: 'RUNNING' }, intentRow(workflowId));
        await applyTask(journal, ref, { id: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_WORKING' } } as Task, { snapshot: true });
        const record = { ...(await journal.getDelegation(ref))!, taskId: 'T1' };
        const words = new StreamQuestionWords(() => ({ taskId: 'T1', contextId: 'C1' }));
        // The agent's history as it keeps it, and the model: what may and must be the question.
        const history: Message[] = [{ messageId: 'ours', role: 'ROLE_USER', parts: [{ text: 'book' }] } as Message];
        const forbidden = new Set<string>();
        let since: string[] = []; // our task's words since the last status
        let lastStatus: { parked: boolean; asked?: string; wordsBefore: string[] } = { parked: false, wordsBefore: [] };
        let everyWorkingSaid = true;
        const apply = async (response: StreamResponse) => applyStreamResponse(journal, record, response, { stream: 's1', held: await journal.getDelegation(ref) });
        for (const [index, each] of sent.entries()) {
          if (index >= delivered) {
            // Unseen by the row: only in the agent's history (ours, a progress message, a question).
            if ('say' in each && each.say === 'ours') history.push(message(`m${index}`, `word-${index}`, 'T1'));
            else if ('say' in each) forbidden.add(`foreign-${index}`);
            else if ('working' in each && each.working) history.push(message(`p${index}`, `progress-${index}`, 'T1'));
            else if ('ask' in each && each.ask) history.push(message(`q${index}`, `asked-${index}`, 'T1'));
            continue;
          }
          if ('say' in each) {
            const text = each.say === 'ours' ? `word-${index}` : `foreign-${index}`;
            const said = message(`m${index}`, text, each.say === 'ours' ? 'T1' : each.say === 'other-task' ? 'T9' : undefined);
            if (each.say !== 'ours') forbidden.add(text);
            else {
              since.push(text);
              history.push(said);
            }
            const again = words.wordsAfter(said);
            await apply(again ?? { message: said });
          } else if ('working' in each) {
            for (const text of since) forbidden.add(text);
            for (const text of lastStatus.wordsBefore) forbidden.add(text);
            since = [];
            const progress = each.working ? message(`p${index}`, `progress-${index}`, 'T1') : undefined;
            if (progress) {
              forbidden.add(`progress-${index}`);
              history.push(progress);
            } else everyWorkingSaid = false;
            lastStatus = { parked: false, wordsBefore: [] };
            await apply(words.withWords({ statusUpdate: { taskId: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_WORKING', ...(progress ? { message: progress } : {}) } } } as StreamResponse));
          } else {
            const asked = each.ask ? message(`q${index}`, `asked-${index}`, 'T1') : undefined;
            if (asked) history.push(asked);
            lastStatus = { parked: true, ...(asked ? { asked: `asked-${index}` } : {}), wordsBefore: since };
            since = [];
            await apply(words.withWords({ statusUpdate: { taskId: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_INPUT_REQUIRED', ...(asked ? { message: asked } : {}) } } } as StreamResponse));
          }
        }
        const check = async (after: 'stream' | 'read') => {
          const row = (await journal.getDelegation(ref))!;
          if (!lastStatus.parked) return row;
          expect(row.state).toBe('INPUT_REQUIRED');
          const text = textOf(row.question);
          if (lastStatus.asked) {
            expect(text).toBe(lastStatus.asked);
            return row;
          }
          for (const each of forbidden) if (after === 'stream' || everyWorkingSaid || !each.startsWith('word-')) expect(text).not.toContain(each);
          if (lastStatus.wordsBefore.length > 0 || since.length > 0) expect(text).not.toBe('');
          return row;
        };
        const streamed = await check('stream');
        // The read shows the agent's last status; statuses the row never saw are known to it by the read only.
        if (delivered < sent.length) {
          const unseen = sent.slice(delivered).findLast((each) => !('say' in each));
          if (unseen && 'ask' in unseen) lastStatus = { parked: true, ...(unseen.ask ? { asked: `asked-${sent.lastIndexOf(unseen)}` } : {}), wordsBefore: [] };
          else if (unseen) lastStatus = { parked: false, wordsBefore: [] };
          since = [];
        }
        // One read: the task as it is (the last status), its history whole, its tail, or none.
        const last = sent.findLast((each) => !('say' in each));
        const parked = last !== undefined && 'ask' in last;
        const lastAsked = parked && last.ask ? history.findLast((each) => each.messageId.startsWith('q')) : undefined;
        const shown = historyKind === 'whole' ? history : historyKind === 'tail' ? history.slice(-2) : undefined;
        await applyTask(journal, ref, { id: 'T1', contextId: 'C1', status: { state: parked ? 'TASK_STATE_INPUT_REQUIRED' : 'TASK_STATE_WORKING', ...(lastAsked ? { message: lastAsked } : {}) }, ...(shown ? { history: shown } : {}) } as Task, { snapshot: true, held: await journal.getDelegation(ref) });
        const read = await check('read');
        const streamParked = streamed.state === 'INPUT_REQUIRED';
        if (parked && streamParked && delivered === sent.length && textOf(streamed.question) !== '') expect(textOf(read.question)).toBe(textOf(streamed.question));
        // A read that parks the row shows the words at its history's end (after our message and the last status message
        // the row recorded) when they are there.
        if (parked && !lastAsked && !streamParked && historyKind === 'whole' && history.at(-1)?.role === 'ROLE_AGENT' && history.at(-1)!.messageId !== streamed.statusMessage?.messageId)
          expect(textOf(read.question)).not.toBe('');
      }),
      {
        numRuns: 150,
        examples: [
          // A36: a progress message, then the question without words the stream never showed (only the read).
          [[{ working: true }, { ask: false }], 'whole', 1],
          // The red team's case: the question as a Message, then INPUT_REQUIRED without a message.
          [[{ working: true }, { say: 'ours' }, { ask: false }], 'whole', undefined],
          // The question after the bare status; a WORKING between two questions.
          [[{ say: 'ours' }, { working: true }, { ask: false }, { say: 'ours' }], 'tail', undefined],
        ],
      },
    );
  }, 120_000);
});
