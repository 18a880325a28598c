/**
 * The suspects of a row that finished without a task of ours (review of this session's change). A push may show our
 * message in a task while our row is still INTENT (our send's answer not journaled yet): the suspect is kept on the
 * row (noteSuspect-1.lua) until a task is bound. A row that then finishes unbound (at its attempt deadline, say) keeps
 * it, and the settle waits for a finished row's suspects to be read (settle.ts); the reconciler read them only for a
 * row bound to a task: the settle asked again every second for ever and the workflow never decided. Now a finished
 * row's suspects are read whether or not it was bound; a task holding our message is noted on the row
 * (`protocolError` DUPLICATE_TASK: the agent got our message although the row finished without a task of ours), the
 * state unchanged, and the workflow decides. Real redis-server, real fleet, raw agent; the rows are journaled directly.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { useRedisServer } from '../harness/redis.ts';
import { closeKeptAfterEach } from '../harness/lifecycle.ts';
import { eventually, startTestFleet } from '../harness/fleet.ts';
import { agentWorkflowRows } from '../harness/journal-rows.ts';
import { startSuspectsAgent } from '../harness/holders.ts';

let counter = 0;

describe('a finished row that kept suspects without ever being bound to a task of ours', () => {
  const redisServer = useRedisServer();
  const keep = closeKeptAfterEach();

  /** One workflow whose only step finished `state` unbound after a push kept `suspects`; `holding`: the ones holding our message. */
  async function finishedUnbound(suspects: readonly string[], holding: ReadonlySet<string>, state: 'FAILED' | 'CANCELED') {
    const prefix = `unbound-suspects${++counter}`;
    const workflowId = `${prefix}-w`;
    const messageId = `m-${workflowId}`;
    const agent = await startSuspectsAgent(suspects, holding, messageId);
    keep(agent);
    // The rows are journaled on a connection of the test's own (as the producer and a push route would leave them).
    const { producer, journal, ref } = await agentWorkflowRows({ redisUrl: redisServer().url, prefix, workflowId, cardUrl: agent.cardUrl, keep });
    for (const id of suspects) expect(await journal.noteSuspect(ref, id)).toBe('kept');
    await journal.applyStatus(ref, { mode: 'outcome', state, error: { code: state === 'FAILED' ? 'DEADLINE_EXCEEDED' : 'CANCELED_BEFORE_SEND', message: 'ended before its send was answered' } });
    const fleet = await startTestFleet({ redisUrl: redisServer().url, prefix });
    keep(fleet);
    // Generous: the start-up sweep reconciles the row at once; on the old code the workflow never decided.
    await eventually(async () => (await producer.get(workflowId)).state !== 'RUNNING', 'the workflow decided', 30_000);
    const row = (await journal.getDelegation(ref))!;
    const reads = (id: string) => agent.requests.filter((request) => request.method === 'GetTask' && (request.params as { id?: unknown }).id === id).length;
    return { row, reads };
  }

  it('T2 holds our message: read, noted DUPLICATE_TASK on the FAILED row (state kept), the workflow decides', async () => {
    const { row, reads } = await finishedUnbound(['T2'], new Set(['T2']), 'FAILED');
    expect(reads('T2')).toBeGreaterThan(0);
    expect(row.state).toBe('FAILED');
    expect(row.error?.code).toBe('DEADLINE_EXCEEDED');
    expect(row.protocolError?.code).toBe('DUPLICATE_TASK');
    expect(row.protocolError?.message).toContain('T2');
    expect(row.suspects).toBeUndefined();
  }, 60_000);

  it('property: any suspects (holding or not), FAILED or CANCELED: every one read, the holders noted, the state kept, the workflow decides', async () => {
    const scenes = fc
      .uniqueArray(fc.constantFrom('T2', 'T3', 'T4', 'T5'), { minLength: 1, maxLength: 4 })
      .chain((suspects) => fc.tuple(fc.constant(suspects), fc.subarray(suspects), fc.constantFrom<'FAILED' | 'CANCELED'>('FAILED', 'CANCELED')));
    await fc.assert(
      fc.asyncProperty(scenes, async ([suspects, holders, state]) => {
        const { row, reads } = await finishedUnbound(suspects, new Set(holders), state);
        for (const id of suspects) expect(reads(id), `GetTask ${id}`).toBeGreaterThan(0);
        expect(row.state).toBe(state);
        if (holders.length > 0) expect(row.protocolError?.code).toBe('DUPLICATE_TASK');
        else expect(row.protocolError).toBeUndefined();
      }),
      { numRuns: 3, examples: [[[['T2', 'T3'], [], 'CANCELED']], [[['T3', 'T2'], ['T2'], 'FAILED']]] },
    );
  }, 240_000);
});
