/**
 * Property (attack 33, kind: a task beside an error is no refusal, attack13, on the gRPC binding): a gRPC status whose
 * `grpc-status-details-bin` names a task (a 1.0 or 0.3 Task, a SendMessageResponse or StreamResponse holding one, in
 * any position among the details, beside the spec's ErrorInfo of a refusal or not) is never "nothing created": the
 * agent has a task, ours or not, so `sendEffectOf` is `maybe` and the search decides. Before, INVALID_ARGUMENT with the
 * ErrorInfo INVALID_PARAMS and the booked task beside it was a refusal: FAILED, the step sent to a second agent.
 * The same status without a task detail keeps its verdict (the control). Pure: `errorFromGrpc` over built statuses.
 */
import { create, fromJson, toBinary, type JsonValue } from '@bufbuild/protobuf';
import { Metadata, type ServiceError } from '@grpc/grpc-js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { A2AError, InvalidAgentResponseError, sendEffectOf } from '../src/errors.ts';
import { GRPC_REGISTRY, messageType } from '../src/grpc/codec.ts';
import { errorFromGrpc } from '../src/grpc/status-table.ts';

/** Refusing statuses and the reasons of the spec's table that refuse on them (effect none without a task beside). */
const REFUSALS: [number, string][] = [[3, 'INVALID_PARAMS'], [3, 'INVALID_REQUEST'], [9, 'UNSUPPORTED_OPERATION'], [12, 'METHOD_NOT_FOUND'], [9, 'VERSION_NOT_SUPPORTED'], [3, 'CONTENT_TYPE_NOT_SUPPORTED']];

const task10 = { id: 'T1', contextId: 'c', status: { state: 'TASK_STATE_COMPLETED' }, artifacts: [{ artifactId: 'a1', parts: [{ text: 'booked' }] }] };
const task03 = { id: 'T1', contextId: 'c', status: { state: 'TASK_STATE_COMPLETED' } };
/** Details naming a task: type name and ProtoJSON. */
const TASK_DETAILS: [string, unknown][] = [
  ['lf.a2a.v1.Task', task10],
  ['lf.a2a.v1.SendMessageResponse', { task: task10 }],
  ['lf.a2a.v1.StreamResponse', { task: task10 }],
  ['a2a.v1.Task', task03],
];
/** Details naming no task. */
const OTHER_DETAILS: [string, unknown][] = [
  ['google.rpc.DebugInfo', { detail: 'no' }],
  ['lf.a2a.v1.Message', { messageId: 'm', role: 'ROLE_AGENT', parts: [{ text: 'invalid' }] }],
];

const anyOf = ([typeName, json]: [string, unknown]) => {
  // A type the registry lacks (google.rpc.DebugInfo): its bytes as a server writes them (`detail: "no"`).
  if (typeName === 'google.rpc.DebugInfo') return { typeUrl: `type.googleapis.com/${typeName}`, value: new Uint8Array([0x12, 0x02, 0x6e, 0x6f]) };
  const type = messageType(typeName);
  return { typeUrl: `type.googleapis.com/${typeName}`, value: toBinary(type, fromJson(type, json as JsonValue, { registry: GRPC_REGISTRY })) };
};

/** A grpc-js ServiceError of `code` whose details trailer holds `details` (each an Any). */
function statusError(code: number, details: { typeUrl: string; value: Uint8Array }[]): ServiceError {
  const statusType = messageType('google.rpc.Status');
  const metadata = new Metadata();
  metadata.set('grpc-status-details-bin', Buffer.from(toBinary(statusType, create(statusType, { code, message: 'refused', details } as never))));
  return Object.assign(new Error('refused'), { code, details: 'refused', metadata }) as ServiceError;
}

const errorInfo = (reason: string) => anyOf(['google.rpc.ErrorInfo', { reason, domain: 'a2a-protocol.org' }]);

describe('property (attack 33): a gRPC status whose details name a task is never "nothing created"', () => {
  it('over refusing statuses and reasons, task spellings, other details and positions: effect maybe', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...REFUSALS),
        fc.constantFrom(...TASK_DETAILS),
        fc.array(fc.constantFrom(...OTHER_DETAILS), { maxLength: 3 }),
        fc.nat(),
        fc.boolean(),
        ([code, reason], taskDetail, others, position, withErrorInfo) => {
          const details = [...(withErrorInfo ? [errorInfo(reason)] : []), ...others.map(anyOf)];
          details.splice(position % (details.length + 1), 0, anyOf(taskDetail));
          const error = errorFromGrpc(statusError(code, details), 'http://agent');
          const what = JSON.stringify({ code, reason, taskDetail: taskDetail[0], others: others.map(([name]) => name), withErrorInfo });
          expect(error, what).toBeInstanceOf(InvalidAgentResponseError);
          expect(error.delivery, what).toBe('received');
          expect(sendEffectOf(error), what).toBe('maybe');
        },
      ),
      { numRuns: 300 },
    );
  });

  it('control: the same statuses with only the ErrorInfo and details naming no task keep the refusal (effect none)', () => {
    fc.assert(
      fc.property(fc.constantFrom(...REFUSALS), fc.array(fc.constantFrom(...OTHER_DETAILS), { maxLength: 3 }), ([code, reason], others) => {
        const error = errorFromGrpc(statusError(code, [errorInfo(reason), ...others.map(anyOf)]), 'http://agent');
        expect(error).toBeInstanceOf(A2AError);
        expect(error).not.toBeInstanceOf(InvalidAgentResponseError);
        expect(sendEffectOf(error), JSON.stringify({ code, reason })).toBe('none');
      }),
      { numRuns: 100 },
    );
  });
});
