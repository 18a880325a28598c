/**
 * Every workflow definition shape survives compaction (journal/compacted-record.ts): the writer leaves a
 * step attempt's agentCardUrl out when it equals its step's fixed `agent`, and the reader must put it back
 * for every definition, whatever the other steps look like (a step by `skill` has no `agent`). A record
 * read back differently is unreadable (the journal's parser wants agentCardUrl) and breaks every reader of
 * the workflow: the view, the API (500), the CLI, listings and late jobs.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Journal } from '@durable-a2a/shared';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
let journal: Journal;
let counter = 0;

const CARD_A = 'http://agent-a.example/.well-known/agent-card.json';
const CARD_B = 'http://agent-b.example/.well-known/agent-card.json';

/** How a step names its agent: a fixed card URL, a fixed base URL (the card URL differs), or a skill. */
type StepShape = 'agent' | 'agent-base' | 'skill';

const stepOf = (name: string, shape: StepShape) =>
  shape === 'skill'
    ? { name, skill: 'book', message: { text: `do ${name}` } }
    : { name, agent: shape === 'agent' ? CARD_A : 'http://agent-a.example', message: { text: `do ${name}` } };

const intent = (workflowId: string, step: string, attempt: number, agentCardUrl: string) => ({
  workflowId,
  delegationId: `${step}.${attempt}`,
  step,
  kind: 'step',
  attempt: String(attempt),
  agentCardUrl,
  messageId: `m-${step}-${attempt}`,
  requestedContextId: `c-${step}-${attempt}`,
  state: 'INTENT',
  message: JSON.stringify({ parts: [{ text: `do ${step}` }], metadata: { durableA2a: { workflowId, step, attempt } } }),
  createdAt: '1000',
  updatedAt: '1000',
  version: '1',
});

/** Journals the steps' attempts, finishes them and the workflow; returns the records before and after compaction. */
async function finishAndReadBack(shapes: { shape: StepShape; skillCard: string }[]) {
  const workflowId = `shapes-${++counter}`;
  const steps = shapes.map(({ shape }, index) => stepOf(`s${index}`, shape));
  const cards = shapes.map(({ shape, skillCard }) => (shape === 'skill' ? skillCard : CARD_A));
  const definition = JSON.stringify({ workflowId, steps, maxAttemptsPerStep: 1 });
  await journal.createWorkflow(workflowId, { state: 'RUNNING', definition, createdAt: '1000' }, intent(workflowId, 's0', 1, cards[0]!));
  for (let index = 1; index < steps.length; index++) await journal.createIntent(workflowId, intent(workflowId, `s${index}`, 1, cards[index]!));
  const refs = steps.map(({ name }) => ({ workflowId, delegationId: `${name}.1` }));
  for (const ref of refs) await journal.applyStatus(ref, { mode: 'outcome', state: 'COMPLETED', result: { ok: true } });
  const before = await Promise.all(refs.map((ref) => journal.getDelegation(ref)));
  await journal.updateWorkflow(workflowId, { state: 'COMPLETED' });
  const compacted = (await redis().exists(journal.keys.finished(workflowId))) === 1;
  const after = await Promise.all(refs.map((ref) => journal.getDelegation(ref)));
  return { compacted, before, after, cards };
}

beforeAll(() => {
  journal = new Journal(redis(), { prefix: 'crshape', retentionMs: 60_000, now: () => 5_000 });
});

describe('compacted record: every definition shape', () => {
  it('a fixed-agent step beside a step by skill keeps its agent card URL once compacted', async () => {
    const { compacted, before, after } = await finishAndReadBack([
      { shape: 'agent', skillCard: CARD_A },
      { shape: 'skill', skillCard: CARD_B },
    ]);
    expect(compacted).toBe(true);
    expect(after.map((record) => record?.agentCardUrl)).toEqual([CARD_A, CARD_B]);
    expect(after).toEqual(before);
  });

  it('property: any mix of fixed-agent, base-URL and skill steps reads back the same records', async () => {
    const shape = fc.record({ shape: fc.constantFrom<StepShape>('agent', 'agent-base', 'skill'), skillCard: fc.constantFrom(CARD_A, CARD_B) });
    await fc.assert(
      fc.asyncProperty(fc.array(shape, { minLength: 1, maxLength: 5 }), async (shapes) => {
        const { compacted, before, after, cards } = await finishAndReadBack(shapes);
        expect(compacted).toBe(true);
        expect(after.map((record) => record?.agentCardUrl)).toEqual(cards);
        expect(after).toEqual(before);
      }),
      { numRuns: 40, seed: 20261201 },
    );
  });
});
