/**
 * `isUpdateInAnotherContext` (push.ts): a pushed status or artifact update naming a context other than the
 * delegation's is not applied (the workers read the task in full); one in our context, or naming none, is judged by
 * its task id alone. Attack 27: a FAILED update of T1 in "ctx-other" settled the row FAILED at once.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { StreamResponse } from '@durable-a2a/a2a';
import { isUpdateInAnotherContext } from '../src/server/routes/push.ts';

const status = (contextId: string | undefined): StreamResponse =>
  ({ statusUpdate: { taskId: 'T1', ...(contextId === undefined ? {} : { contextId }), status: { state: 'TASK_STATE_FAILED' } } }) as StreamResponse;
const artifact = (contextId: string | undefined): StreamResponse =>
  ({ artifactUpdate: { taskId: 'T1', ...(contextId === undefined ? {} : { contextId }), artifact: { artifactId: 'a1', parts: [{ text: 'x' }] }, lastChunk: true } }) as StreamResponse;

describe('a pushed update in another context', () => {
  it('the attack-27 case: FAILED of T1 in ctx-other, ours ctx-ours: not applied', () => {
    expect(isUpdateInAnotherContext({ contextId: 'ctx-ours', requestedContextId: 'ctx-ours' }, status('ctx-other'))).toBe(true);
  });

  it('property: not applied exactly when the update names a context and it differs from ours (the agent\'s, else the one we asked for)', () => {
    const context = fc.constantFrom(undefined, '', 'ctx-ours', 'ctx-agent', 'ctx-other');
    fc.assert(
      fc.property(context, context, context, fc.boolean(), (agents, requested, pushed, isStatus) => {
        const record = { ...(agents ? { contextId: agents } : {}), ...(requested ? { requestedContextId: requested } : {}) };
        const ours = agents || requested || undefined;
        const expected = !!pushed && ours !== undefined && pushed !== ours;
        expect(isUpdateInAnotherContext(record, isStatus ? status(pushed) : artifact(pushed))).toBe(expected);
      }),
      { examples: [['ctx-ours', 'ctx-ours', 'ctx-other', true], ['ctx-agent', 'ctx-ours', 'ctx-ours', true], [undefined, 'ctx-ours', undefined, false], ['ctx-agent', 'ctx-ours', 'ctx-agent', false], [undefined, undefined, 'ctx-other', true]] },
    );
  });

  it('a whole Task or a Message is never judged here (pushRefusal and the table do)', () => {
    const record = { contextId: 'ctx-ours' };
    expect(isUpdateInAnotherContext(record, { task: { id: 'T1', contextId: 'ctx-other', status: { state: 'TASK_STATE_WORKING' } } } as StreamResponse)).toBe(false);
    expect(isUpdateInAnotherContext(record, { message: { messageId: 'm', role: 'ROLE_AGENT', parts: [{ text: 'x' }], contextId: 'ctx-other' } } as StreamResponse)).toBe(false);
  });
});
