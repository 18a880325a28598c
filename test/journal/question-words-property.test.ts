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
            }
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
          // (Before question36 a read was let off for our words before a WORKING without a message: the row kept no cut.)
          for (const each of forbidden) expect(text).not.toContain(each);
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
        // (Not a message the stream showed before a later status: no question's words, A36.)
        if (parked && !lastAsked && !streamParked && historyKind === 'whole' && history.at(-1)?.role === 'ROLE_AGENT' && history.at(-1)!.messageId !== streamed.statusMessage?.messageId && !forbidden.has(textOf(history.at(-1))))
          expect(textOf(read.question)).not.toBe('');
      }),
      {
        numRuns: 150,
        examples: [
          // A36: a progress message, then the question without words the stream never showed (only the read).
          [[{ working: true }, { ask: false }], 'whole', 1],
          // The A36 variant (question36): our Message, a WORKING without a message, the bare question only the read shows.
          [[{ say: 'ours' }, { working: false }, { ask: false }], 'whole', 2],
          // The red team's case: the question as a Message, then INPUT_REQUIRED without a message.
          [[{ working: true }, { say: 'ours' }, { ask: false }], 'whole', undefined],
          // The question after the bare status; a WORKING between two questions.
          [[{ say: 'ours' }, { working: true }, { ask: false }, { say: 'ours' }], 'tail', undefined],
        ],
      },
    );
  }, 120_000);

  // question36: every path that applies a status (a stream's status update, a stream's Task, GetTask with the row as
  // held or a stale copy of it, a push) and every path that shows the agent's messages (a stream's Message events, a
  // Task's history, a status message), interleaved. A message the row saw before a later status it applied, by that
  // status's own channel (on the stream before a later status event of it; in the history of a Task whose unparked
  // status it applied; the status message a later status replaced), is never a question's words after it, unless a
  // stream showed it after the last unparked status on a stream (the stream's order is the better knowledge). A message of
  // another task never is. A read that parks the row on a bare question whose history ends with a message of ours the
  // row never saw shows words.
  it('question36: through every path, a message seen before a later applied status is never the words of a question after it', async () => {
    let run = 0;
    type Step =
      | { say: 'ours' | 'other-task' }
      | { working: boolean }
      | { ask: boolean }
      | { read: 'whole' | 'tail' | 'none'; stale: boolean }
      | { push: true }
      | { drop: true }
      | { resubscribe: 'whole' | 'tail' | 'none' };
    const step: fc.Arbitrary<Step> = fc.oneof(
      { weight: 3, arbitrary: fc.record({ say: fc.constantFrom('ours' as const, 'ours' as const, 'other-task' as const) }) },
      { weight: 2, arbitrary: fc.record({ working: fc.boolean() }) },
      { weight: 2, arbitrary: fc.record({ ask: fc.boolean() }) },
      { weight: 2, arbitrary: fc.record({ read: fc.constantFrom('whole' as const, 'tail' as const, 'none' as const), stale: fc.boolean() }) },
      { weight: 1, arbitrary: fc.constant({ push: true as const }) },
      { weight: 1, arbitrary: fc.constant({ drop: true as const }) },
      { weight: 1, arbitrary: fc.record({ resubscribe: fc.constantFrom('whole' as const, 'tail' as const, 'none' as const) }) },
    );
    const tokensOf = (text: string): string[] => text.match(/\[[^\]]+\]/g) ?? [];
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 14 }), async (steps) => {
        const journal = new Journal(redis(), { prefix: `words36-${++run}`, retentionMs: 60_000 });
        const workflowId = `wf36-${run}`;
        const ref = { workflowId, delegationId: 'main.1' };
        await journal.createWorkflow(workflowId, { state: 'RUNNING' }, intentRow(workflowId));
        await applyTask(journal, ref, { id: 'T1', contextId: 'C1', status: { state: 'TASK_STATE_WORKING' } } as Task, { snapshot: true });
        const record = { ...(await journal.getDelegation(ref))!, taskId: 'T1' };
        const row = async () => (await journal.getDelegation(ref))!;
        // The agent as it is: its history (ours first) and its last status.
        const history: Message[] = [{ messageId: 'ours', role: 'ROLE_USER', parts: [{ text: 'book' }] } as Message];
        let current: { state: string; message?: Message } = { state: 'TASK_STATE_WORKING' };
        // The model: tokens never words (`forbidden`), the tokens a stream showed since the last unparked status on a
        // stream (`streamTail`: a stream's words, by its order, even where a read cut them), tokens the row saw (`seen`).
        const foreign = new Set<string>();
        const forbidden = new Set<string>();
        const seen = new Set<string>();
        let streamTail: string[] = [];
        let streamSince: string[] = [];
        let stream: { id: string; words: StreamQuestionWords } | undefined = { id: 's0', words: new StreamQuestionWords(() => ({ taskId: 'T1', contextId: 'C1' })) };
        let streams = 0;
        let copy = await row();
        const unparked = (state: string) => state === 'TASK_STATE_WORKING';
        /** After an applied unparked status: the row's status message before it and `known` are forbidden. */
        const forbidAfter = (before: Message | undefined, known: Iterable<string>) => {
          for (const token of tokensOf(textOf(before))) forbidden.add(token);
          for (const token of known) forbidden.add(token);
        };
        const onStream = async (response: StreamResponse) => {
          const before = await row();
          const result = await applyStreamResponse(journal, record, response, { stream: stream!.id, held: before, ...('task' in response ? { snapshot: true } : {}) });
          return { before, applied: result.status?.applied === true };
        };
        const shownHistory = (kind: 'whole' | 'tail' | 'none') => (kind === 'whole' ? [...history] : kind === 'tail' ? history.slice(-2) : undefined);
        const taskNow = (kind: 'whole' | 'tail' | 'none'): Task => {
          const shown = shownHistory(kind);
          return { id: 'T1', contextId: 'C1', status: { state: current.state, ...(current.message ? { message: current.message } : {}) }, ...(shown ? { history: shown } : {}) } as Task;
        };
        const historyTokens = (task: Task) => (task.history ?? []).filter((each) => each.role === 'ROLE_AGENT').flatMap((each) => tokensOf(textOf(each)));
        for (const [index, each] of steps.entries()) {
          const previous = copy;
          copy = await row();
          let readParked: { fresh: boolean; lastUnseen: boolean } | undefined;
          if ('say' in each) {
            const ours = each.say === 'ours';
            const said = message(`m${index}`, `[m${index}]`, ours ? 'T1' : 'T9');
            if (ours) history.push(said);
            else foreign.add(`[m${index}]`);
            if (stream) {
              seen.add(`[m${index}]`);
              if (ours) {
                streamSince.push(`[m${index}]`);
                streamTail.push(`[m${index}]`);
              }
              const again = stream.words.wordsAfter(said);
              await onStream(again ?? { message: said });
            }
          } else if ('working' in each || 'ask' in each) {
            const said = 'working' in each ? (each.working ? message(`p${index}`, `[p${index}]`, 'T1') : undefined) : each.ask ? message(`q${index}`, `[q${index}]`, 'T1') : undefined;
            if (said) history.push(said);
            current = { state: 'working' in each ? 'TASK_STATE_WORKING' : 'TASK_STATE_INPUT_REQUIRED', ...(said ? { message: said } : {}) };
            if (stream) {
              if (said) seen.add(textOf(said));
              const since = streamSince;
              streamSince = [];
              const { before, applied } = await onStream(stream.words.withWords({ statusUpdate: { taskId: 'T1', contextId: 'C1', status: current } } as StreamResponse));
              if (unparked(current.state)) {
                if (applied) forbidAfter(before.statusMessage, [...since, ...(said ? [textOf(said)] : [])]);
                streamTail = [];
              }
            }
          } else if ('read' in each) {
            const before = each.stale ? previous : copy;
            const task = taskNow(each.read);
            const fresh = await row();
            const lastOurs = task.history?.at(-1);
            if (!unparked(current.state) && !current.message && each.read === 'whole' && fresh.state !== 'INPUT_REQUIRED' && !each.stale && lastOurs?.role === 'ROLE_AGENT' && !seen.has(textOf(lastOurs)))
              readParked = { fresh: true, lastUnseen: true };
            const result = await applyTask(journal, ref, task, { snapshot: true, held: before });
            for (const token of historyTokens(task)) seen.add(token);
            if (current.message) seen.add(textOf(current.message));
            if (unparked(current.state) && result.applied) forbidAfter(fresh.statusMessage, [...historyTokens(task), ...(current.message ? [textOf(current.message)] : [])]);
          } else if ('push' in each) {
            const before = await row();
            const result = await applyStreamResponse(journal, record, { statusUpdate: { taskId: 'T1', contextId: 'C1', status: current } } as StreamResponse);
            if (current.message) seen.add(textOf(current.message));
            if (unparked(current.state) && result.status?.applied) forbidAfter(before.statusMessage, current.message ? [textOf(current.message)] : []);
          } else if ('drop' in each) {
            stream = undefined;
            streamSince = [];
          } else {
            stream = { id: `s${++streams}`, words: new StreamQuestionWords(() => ({ taskId: 'T1', contextId: 'C1' })) };
            streamSince = [];
            const task = taskNow(each.resubscribe);
            const { before, applied } = await onStream(stream.words.withWords({ task }));
            for (const token of historyTokens(task)) seen.add(token);
            if (current.message) seen.add(textOf(current.message));
            if (unparked(current.state) && applied) forbidAfter(before.statusMessage, [...historyTokens(task), ...(current.message ? [textOf(current.message)] : [])]);
            if (unparked(current.state)) streamTail = [];
          }
          // The question's words: no other task's message, no message seen before a later status (but the stream's own).
          const after = await row();
          if (after.state === 'INPUT_REQUIRED' && after.question) {
            const text = textOf(after.question);
            const ownMessage = /^q\d+$/.test(after.question.messageId) && text === `[${after.question.messageId}]`;
            if (!ownMessage)
              for (const token of tokensOf(text)) {
                expect(foreign.has(token), `${token}: another task's message as the question`).toBe(false);
                if (!streamTail.includes(token)) expect(forbidden.has(token), `${token}: seen before a later status, shown as the question`).toBe(false);
              }
          }
          if (readParked) {
            expect(after.state).toBe('INPUT_REQUIRED');
            expect(textOf(after.question)).not.toBe('');
          }
        }
      }),
      {
        numRuns: 150,
        examples: [
          // The A36 variant: a stream Message, a bare WORKING on the stream, a bare INPUT_REQUIRED only a read shows.
          [[{ say: 'ours' }, { working: false }, { drop: true }, { ask: false }, { read: 'whole', stale: false }]],
          // The same through a read of the WORKING (the history shows the progress message), then a read of the question.
          [[{ drop: true }, { say: 'ours' }, { working: false }, { read: 'whole', stale: false }, { ask: false }, { read: 'whole', stale: false }]],
          // review35: a progress status message pushed after the caller's copy was read, then a read with that copy.
          [[{ drop: true }, { working: true }, { push: true }, { ask: false }, { read: 'whole', stale: true }]],
        ],
      },
    );
  }, 240_000);
});
