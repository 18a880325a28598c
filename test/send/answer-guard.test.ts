/**
 * Once an answer's bytes arrived from the agent, any failure to process it (parse, validate, a limit, a stack
 * overflow encoding it for the journal) is an observation with delivery `received`, never an exception that leaves
 * the delivery unrecorded (attack 23: a RangeError in the journal write escaped the send job, and the reconciler read
 * "maybe sent" + an empty search as absence and resent, 6 SendMessage; on the read path reconcile failed for ever).
 * Real redis-server, real fleet, scripted raw JSON-RPC agents (exact bytes).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { finished, useFieldCases } from '../harness/field-cases.ts';
import { eventually } from '../harness/fleet.ts';
import { task, type ScriptedCall } from '../harness/scripted-agent.ts';

const h = useFieldCases();

/** A JSON value nested `depth` levels deep (arrays), as JSON text. */
const nested = (depth: number) => `${'['.repeat(depth)}1${']'.repeat(depth)}`;
/** A raw JSON-RPC success body for `call` whose `result` is `resultJson` (text), preceded by `pad`. */
const rawResult = (call: ScriptedCall, resultJson: string, pad = '') => ({
  http: { status: 200, body: `${pad}{"jsonrpc":"2.0","id":${JSON.stringify(call.id)},"result":${resultJson}}` },
});
/** A task `state` holding our message (`message`) whose artifact carries a data part `dataJson` (text). */
const taskWithData = (message: any, state: string, dataJson: string) =>
  JSON.stringify(task('T1', state, { contextId: message.contextId, history: [message], artifacts: [{ artifactId: 'a1', parts: [{ data: '__DATA__' }] }] })).replace('"__DATA__"', dataJson);
const EMPTY_LIST = { result: { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 } };
/** A depth limit high enough that a 20,000-deep answer passes it and overflows the stack where it is processed. */
const HIGH_DEPTH = { limits: { jsonDepth: 100_000 } };

describe('an answer that arrived and cannot be processed: delivery received, never a second send', () => {
  it('case: a 20,000-deep SendMessage answer under jsonDepth 100,000 (a stack overflow writing it), the agent listing nothing: one SendMessage, AMBIGUOUS LIMIT_EXCEEDED', async () => {
    const { producer: p, agent, id } = await h.setUpAndDelegate(
      () => ({ SendMessage: (params, call) => rawResult(call, `{"task":${taskWithData(params.message, 'COMPLETED', nested(20_000))}}`), ListTasks: () => EMPTY_LIST }),
      { reconcileIntervalMs: 300, ...HIGH_DEPTH },
    );
    const record = await finished(p, id, 30_000);
    expect(agent.count('SendMessage')).toBe(1);
    expect(record.state).toBe('AMBIGUOUS');
    expect(record.error).toMatchObject({ code: 'LIMIT_EXCEEDED', limit: 'jsonDepth' });
  }, 45_000);

  it('case (read path): our task T1 WORKING, then GetTask answers it COMPLETED 20,000 deep: the read failure is counted and a person decides in bounded calls', async () => {
    let message: any;
    const { producer: p, agent, id } = await h.setUpAndDelegate(
      () => ({
        SendMessage: (params) => ((message = params.message), { result: { task: task('T1', 'WORKING', { contextId: params.message.contextId, history: [params.message] }) } }),
        SubscribeToTask: () => ({ error: { code: -32004, message: 'streaming is not supported' } }),
        GetTask: (_params, call) => rawResult(call, taskWithData(message, 'COMPLETED', nested(20_000))),
        ListTasks: () => ({ result: { tasks: [task('T1', 'COMPLETED', { contextId: message.contextId, history: [message] })], nextPageToken: '', pageSize: 50, totalSize: 1 } }),
      }),
      { reconcileIntervalMs: 300, ...HIGH_DEPTH },
    );
    const done = async () => {
      const record = await p.journal.getDelegation({ workflowId: id, delegationId: 'main.1' });
      return record && !['INTENT', 'SENT', 'SUBMITTED', 'WORKING'].includes(record.state) ? record : undefined;
    };
    await eventually(async () => (await done()) !== undefined || agent.count('GetTask') >= 40, 'finished, or 40 GetTask', 45_000);
    expect(agent.count('SendMessage')).toBe(1);
    expect(await done()).toMatchObject({ state: 'AMBIGUOUS' });
    expect(agent.count('GetTask')).toBeLessThan(40);
  }, 60_000);

  /** Where processing the answer fails: a limit at the edge (depth behind padding, parts), a stack overflow in the journal write, unparsable or invalid content. */
  type Stage = 'depth' | 'stack' | 'parts' | 'not-json' | 'invalid';
  const answerAt = (stage: Stage, message: any, pad: string): string => {
    switch (stage) {
      case 'depth':
        return `{"task":${taskWithData(message, 'COMPLETED', nested(100))}}`;
      case 'stack':
        return `{"task":${taskWithData(message, 'COMPLETED', nested(20_000))}}`;
      case 'parts':
        return JSON.stringify({ task: task('T1', 'COMPLETED', { contextId: message.contextId, history: [message], artifacts: [{ artifactId: 'a1', parts: [{ text: 'a' }, { text: 'b' }, { text: 'c' }, { text: 'd' }] }] }) });
      case 'not-json':
        return `{"task":${pad}{"id":"T1",`;
      case 'invalid':
        return `{"task":{"id":7,"status":"done"}}`;
    }
  };
  const fleetOptions = (stage: Stage) => ({ reconcileIntervalMs: 300, ...(stage === 'stack' ? HIGH_DEPTH : stage === 'parts' ? { limits: { partsPerMessage: 3 } } : {}) });

  it('property: a failure at any stage after the answer arrived leaves delivery received, and SendMessage is never repeated', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom<Stage>('depth', 'stack', 'parts', 'not-json', 'invalid'), fc.nat({ max: 200 }), async (stage, padLength) => {
        const pad = ' '.repeat(padLength);
        const { producer: p, agent, id } = await h.setUpAndDelegate(
          () => ({ SendMessage: (params, call) => rawResult(call, answerAt(stage, params.message, pad), pad), ListTasks: () => EMPTY_LIST }),
          fleetOptions(stage),
        );
        const record = await finished(p, id, 30_000);
        expect(agent.count('SendMessage')).toBe(1);
        expect(record.state).toBe('AMBIGUOUS');
        expect(record.error?.delivery ?? 'received').toBe('received');
        await h.closeFleetsAndProducers();
      }),
      {
        numRuns: 6,
        examples: [
          ['depth', 64],
          ['stack', 0],
          ['parts', 3],
          ['not-json', 70],
          ['invalid', 0],
        ],
      },
    );
  }, 300_000);
});
