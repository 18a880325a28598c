/**
 * Property (attack23): only the answering binding's own code proves that a SendMessage created nothing. An agent
 * booked, then answered a JSON-RPC error whose code the spec does not define for it: an HTTP status a proxy put in
 * `code` (404, 400), or a code of the implementation-defined range (-32050) with an ErrorInfo reason TASK_NOT_FOUND.
 * Before, the class named by the status or the reason (TaskNotFoundError, InvalidRequestError) was read as a refusal:
 * effect none, no search, the step sent to a second agent: booked twice. Now such a class describes the error for the
 * logs and its effect is `maybe` (a search by our messageId decides). Over every binding: JSON-RPC (any integer code,
 * with or without reasons, on any HTTP status), HTTP+JSON 1.0 (`google.rpc.Status`, the status is the code) and 0.3
 * (`{code, message}`), gRPC (any status, with or without an ErrorInfo); a JSON-RPC code under a 5xx, 3xx or 408/409/429
 * refuses nothing (edges35). The oracle below is the spec's table (spec
 * §5.4, §9.5, §11.6; JSON-RPC 2.0 §5.1), written out, not read from `A2A_ERROR_TABLE`.
 */
import { Metadata, status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { errorFromHttp, errorFromJsonRpc } from '../src/error-mapping.ts';
import { A2AError, GRPC_CODE, GRPC_REFUSING_STATUSES, TaskNotFoundError, UpstreamError, isRetryable, sendEffectOf } from '../src/errors.ts';
import { encodeFromJson, messageType } from '../src/grpc/codec.ts';
import { GRPC_STATUS_DETAILS_KEY, GRPC_STATUS_TABLE, errorFromGrpc } from '../src/grpc/status-table.ts';
import { errorFromHttpV03 } from '../src/v03/rest.ts';

/** JSON-RPC codes that refuse a SendMessage before it acts: the request errors of JSON-RPC 2.0 §5.1 and the A2A errors raised while validating it. */
const SPEC_REFUSAL_CODES = new Set([-32700, -32600, -32601, -32602, -32001, -32003, -32004, -32005, -32008, -32009]);
/** The spec's other codes: may come after the task was created (internal error, not cancelable, invalid agent response, card not configured). */
const SPEC_OTHER_CODES = [-32603, -32002, -32006, -32007];
/** Reasons naming an error that may come after the work (their class is never a refusal). */
const MAYBE_REASONS = new Set(['TASK_NOT_CANCELABLE', 'INVALID_AGENT_RESPONSE', 'EXTENDED_AGENT_CARD_NOT_CONFIGURED', 'INTERNAL_ERROR', 'ALREADY_EXISTS']);
const REASONS = ['TASK_NOT_FOUND', 'UNSUPPORTED_OPERATION', 'CONTENT_TYPE_NOT_SUPPORTED', 'VERSION_NOT_SUPPORTED', 'EXTENSION_SUPPORT_REQUIRED', 'PUSH_NOTIFICATION_NOT_SUPPORTED', 'INVALID_PARAMS', 'INVALID_REQUEST', 'METHOD_NOT_FOUND', 'PARSE_ERROR', ...MAYBE_REASONS];
/** An ErrorInfo reason of the spec's table naming a refusal (never one that may follow the work). */
const refusalReason = (reason: string | undefined): boolean => reason !== undefined && REASONS.includes(reason) && !MAYBE_REASONS.has(reason);
/** HTTP+JSON: the status is the code; a 4xx may refuse, but 408, 409 and 429 may come after the work. */
const statusRefuses = (status: number) => status >= 400 && status < 500 && ![408, 409, 429].includes(status);

const errorInfo = (reason: string) => ({ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'a2a-protocol.org' });
const reasonArb = fc.option(fc.oneof(fc.constantFrom(...REASONS), fc.string({ maxLength: 12 })), { nil: undefined });
/** `error.data` as agents send it: an ErrorInfo list (1.0), one ErrorInfo object (0.3 habit), or something else. */
const dataArb = (reason: string | undefined) =>
  reason === undefined ? fc.constantFrom<unknown>(undefined, null, 'details', { retry: true }) : fc.constantFrom<unknown>([errorInfo(reason)], errorInfo(reason), [{ note: 'x' }, errorInfo(reason)]);
const codeArb = fc.oneof(
  fc.integer(),
  fc.constantFrom(...SPEC_REFUSAL_CODES, ...SPEC_OTHER_CODES),
  fc.integer({ min: -32099, max: -32000 }),
  fc.integer({ min: -32768, max: -32000 }),
  fc.integer({ min: 100, max: 599 }),
);
/** 200: the error in a 2xx (JSON-RPC's own way); any other: the JSON-RPC envelope on an error status. */
const httpStatusArb = fc.oneof(fc.constant(200), fc.integer({ min: 300, max: 599 }));

/**
 * Whether the HTTP status around a JSON-RPC code may carry a refusal (edges35): a 2xx or a refusing 4xx, never a 5xx, a
 * 3xx or 408/409/429. `jsonRpcAnswer` sends a 0.3 HTTP+JSON body asked on 200 under 500 (a 2xx is no error there).
 */
const codeCarriedBy = (binding: 'JSONRPC' | 'HTTP+JSON 0.3', httpStatus: number): boolean => {
  const status = binding === 'HTTP+JSON 0.3' && httpStatus === 200 ? 500 : httpStatus;
  return (status >= 200 && status < 300) || statusRefuses(status);
};

/** A JSON-RPC error answer to our request as the client reads it (1.0, or a 0.3 REST `{code, message, data}` body). */
function jsonRpcAnswer(code: number, data: unknown, httpStatus: number, binding: 'JSONRPC' | 'HTTP+JSON 0.3'): A2AError {
  const error = { code, message: 'no', ...(data === undefined ? {} : { data }) };
  if (binding === 'HTTP+JSON 0.3') return errorFromHttpV03(httpStatus === 200 ? 500 : httpStatus, 'application/json', JSON.stringify(error));
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, error });
  return httpStatus === 200 ? errorFromJsonRpc(error, body, 200) : errorFromHttp(httpStatus, 'application/json', body);
}

/** An HTTP+JSON 1.0 error answer (`google.rpc.Status`) with `status`, and an ErrorInfo when given a reason. */
function httpJsonError(status: number, reason: string | undefined, withStatusName: boolean): A2AError {
  const body = { error: { code: status, ...(withStatusName ? { status: 'SOME_STATUS' } : {}), message: 'no', ...(reason === undefined ? {} : { details: [errorInfo(reason)] }) } };
  return errorFromHttp(status, 'application/json', JSON.stringify(body));
}

/** A gRPC failure with `code` and, given a reason, its ErrorInfo in the details trailer. */
function grpcFailure(code: number, reason: string | undefined): ServiceError {
  const metadata = new Metadata();
  if (reason !== undefined) {
    metadata.set(GRPC_STATUS_DETAILS_KEY, encodeFromJson(messageType('google.rpc.Status'), { code, message: reason, details: [errorInfo(reason)] }));
  }
  return Object.assign(new Error('no'), { code, details: 'no', metadata });
}

describe('property: only the binding\'s own refusal code proves nothing was created', () => {
  it('JSON-RPC (1.0 and 0.3 REST): any integer code, any reason, any HTTP status: effect none only for the spec\'s refusal codes (and a 401/403 status)', () => {
    fc.assert(
      fc.property(
        codeArb,
        reasonArb.chain((reason) => dataArb(reason).map((data) => ({ reason, data }))),
        httpStatusArb,
        fc.constantFrom<'JSONRPC' | 'HTTP+JSON 0.3'>('JSONRPC', 'HTTP+JSON 0.3'),
        (code, { data }, httpStatus, binding) => {
          const error = jsonRpcAnswer(code, data, httpStatus, binding);
          expect(error).toBeInstanceOf(A2AError);
          // A 401/403 status refuses our credentials before any JSON-RPC handler ran, whatever the body says; a refusal
          // code counts only under a status that may carry one (a 2xx, a refusing 4xx: never a 5xx, 3xx, 408/409/429).
          const expected = (SPEC_REFUSAL_CODES.has(code) && codeCarriedBy(binding, httpStatus)) || httpStatus === 401 || httpStatus === 403 ? 'none' : 'maybe';
          expect(sendEffectOf(error), `${binding} HTTP ${httpStatus} code ${code} ${JSON.stringify(data)}: ${error.name}`).toBe(expected);
        },
      ),
      {
        numRuns: 600,
        examples: [
          [404, { reason: undefined, data: undefined }, 200, 'JSONRPC'],
          [400, { reason: undefined, data: undefined }, 200, 'JSONRPC'],
          [415, { reason: undefined, data: undefined }, 200, 'JSONRPC'],
          [405, { reason: undefined, data: undefined }, 200, 'JSONRPC'],
          [401, { reason: undefined, data: undefined }, 200, 'JSONRPC'],
          [502, { reason: undefined, data: undefined }, 200, 'JSONRPC'],
          [-32050, { reason: 'TASK_NOT_FOUND', data: [errorInfo('TASK_NOT_FOUND')] }, 200, 'JSONRPC'],
          [-32050, { reason: 'VERSION_NOT_SUPPORTED', data: errorInfo('VERSION_NOT_SUPPORTED') }, 200, 'JSONRPC'],
          [1, { reason: 'UNSUPPORTED_OPERATION', data: [errorInfo('UNSUPPORTED_OPERATION')] }, 200, 'JSONRPC'],
          [-32603, { reason: 'INVALID_PARAMS', data: [errorInfo('INVALID_PARAMS')] }, 200, 'JSONRPC'],
          [-32001, { reason: undefined, data: undefined }, 200, 'JSONRPC'],
          [-32602, { reason: 'INTERNAL_ERROR', data: [errorInfo('INTERNAL_ERROR')] }, 200, 'JSONRPC'],
          [-32001, { reason: undefined, data: undefined }, 404, 'JSONRPC'],
          [404, { reason: undefined, data: undefined }, 404, 'JSONRPC'],
          [-32009, { reason: undefined, data: undefined }, 400, 'HTTP+JSON 0.3'],
          [404, { reason: undefined, data: undefined }, 404, 'HTTP+JSON 0.3'],
          [-32050, { reason: 'TASK_NOT_FOUND', data: [errorInfo('TASK_NOT_FOUND')] }, 401, 'JSONRPC'],
        ],
      },
    );
  });

  it('HTTP+JSON 1.0: any status, any reason: effect none only when the status refuses (401/403 whatever the reason) and an ErrorInfo names a refusal of the spec\'s table', () => {
    fc.assert(
      fc.property(fc.integer({ min: 300, max: 599 }), reasonArb, fc.boolean(), (status, reason, withStatusName) => {
        const error = httpJsonError(status, reason, withStatusName);
        // 401/403 refuse our credentials before any handler ran, whatever the body says (`AuthenticationError`).
        const credentials = status === 401 || status === 403;
        // Spec §11.6: the ErrorInfo MUST be present; a google.rpc.Status without one (or with another API's reason) is
        // any server's answer, maybe after the agent acted (fourohfour).
        const expected = credentials || (statusRefuses(status) && refusalReason(reason)) ? 'none' : 'maybe';
        expect(sendEffectOf(error), `HTTP ${status} reason ${reason}: ${error.name}`).toBe(expected);
      }),
      {
        numRuns: 400,
        examples: [
          [404, 'TASK_NOT_FOUND', true],
          [400, 'UNSUPPORTED_OPERATION', true],
          [400, 'TASK_NOT_CANCELABLE', true],
          [500, 'TASK_NOT_FOUND', true],
          [503, 'UNSUPPORTED_OPERATION', false],
          [302, 'INVALID_REQUEST', false],
          [408, 'INVALID_PARAMS', false],
          [410, undefined, false],
          [409, undefined, true],
          [401, 'INTERNAL_ERROR', false],
        ],
      },
    );
  });

  it('gRPC: any status, any reason: effect none only when the status may refuse and its ErrorInfo names a refusal of the spec (or the status refuses our credentials)', () => {
    // grpcstatus: a status alone (no ErrorInfo, or another API's reason) refuses nothing but our credentials.
    const refusing = new Set([3, 5, 7, 9, 11, 12, 16]);
    const credentials = new Set([7, 16]);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 20 }), reasonArb, (code, reason) => {
        const error = errorFromGrpc(grpcFailure(code, reason), 'http://agent.test');
        const spoken = refusalReason(reason) || (credentials.has(code) && (reason === undefined || !MAYBE_REASONS.has(reason)));
        const expected = refusing.has(code) && spoken ? 'none' : 'maybe';
        expect(sendEffectOf(error), `gRPC ${code} reason ${reason}: ${error.name}`).toBe(expected);
      }),
      { numRuns: 300, examples: [[5, 'TASK_NOT_FOUND'], [13, 'TASK_NOT_FOUND'], [2, 'VERSION_NOT_SUPPORTED'], [14, 'UNSUPPORTED_OPERATION'], [9, 'TASK_NOT_CANCELABLE'], [9, undefined], [12, undefined], [6, 'TASK_NOT_FOUND'], [17, 'INVALID_PARAMS']] },
    );
  });

  it('the gRPC statuses that may refuse are those the status table maps to a refusal class', () => {
    for (const [status, ErrorClass] of GRPC_STATUS_TABLE) expect(GRPC_REFUSING_STATUSES.has(status), String(status)).toBe(sendEffectOf(new ErrorClass('x')) === 'none');
    expect([...GRPC_REFUSING_STATUSES].sort((a, b) => a - b)).toEqual([3, 5, 7, 9, 11, 12, 16]);
  });

  it('the pure spelling of the gRPC status codes is the gRPC client\'s, and the table has a row for every status but OK', () => {
    for (const [name, code] of Object.entries(GRPC_CODE)) expect(GrpcStatus[name as keyof typeof GrpcStatus], name).toBe(code);
    expect([...GRPC_STATUS_TABLE.keys()].sort((a, b) => a - b)).toEqual(Object.values(GrpcStatus).filter((code): code is number => typeof code === 'number' && code !== GrpcStatus.OK).sort((a, b) => a - b));
  });

  it('a descriptive class is kept for the logs (404 in code: TaskNotFoundError, maybe); R08 c: a proxy\'s 502 in code stays a retryable upstream error', () => {
    const notFound = errorFromJsonRpc({ code: 404, message: 'Not Found' }, '{}', 200);
    expect(notFound).toBeInstanceOf(TaskNotFoundError);
    expect(notFound).toMatchObject({ jsonRpcCode: 404, delivery: 'received' });
    expect(sendEffectOf(notFound)).toBe('maybe');
    const badGateway = errorFromJsonRpc({ code: 502, message: 'Bad Gateway' }, '{}', 200);
    expect(badGateway).toBeInstanceOf(UpstreamError);
    expect(isRetryable(badGateway)).toBe(true);
    expect(sendEffectOf(badGateway)).toBe('maybe');
  });
});

/**
 * Property (attack28): TaskNotFound refuses only a request that names a task (spec §5.4: "the specified task ID"). To
 * a step's SendMessage, which names none, it proves nothing about our request: an agent that created our task and then
 * failed to find it answers it too. Before, -32001 (or HTTP 404 / gRPC NOT_FOUND, or a TASK_NOT_FOUND reason on a
 * refusing code) to such a send was effect none: FAILED without a search, the step re-delegated, booked twice. Every
 * other error keeps its effect. The oracle is the spec's table written out, minus the task refusal.
 */
describe('property: TaskNotFound to a SendMessage naming no task never proves nothing was created', () => {
  const noTask = { namesTask: false } as const;
  it('JSON-RPC: effect none only for the spec\'s refusal codes other than -32001 (and a 401/403 status)', () => {
    fc.assert(
      fc.property(codeArb, reasonArb.chain((reason) => dataArb(reason).map((data) => ({ reason, data }))), httpStatusArb, fc.constantFrom<'JSONRPC' | 'HTTP+JSON 0.3'>('JSONRPC', 'HTTP+JSON 0.3'), (code, { data }, httpStatus, binding) => {
        const error = jsonRpcAnswer(code, data, httpStatus, binding);
        const expected = (SPEC_REFUSAL_CODES.has(code) && code !== -32001 && codeCarriedBy(binding, httpStatus)) || httpStatus === 401 || httpStatus === 403 ? 'none' : 'maybe';
        expect(sendEffectOf(error, noTask), `${binding} HTTP ${httpStatus} code ${code} ${JSON.stringify(data)}: ${error.name}`).toBe(expected);
        // A request that names a task (a reply): -32001 refuses it, as before.
        if (code === -32001 && httpStatus === 200 && binding === 'JSONRPC') expect(sendEffectOf(error, { namesTask: true })).toBe('none');
      }),
      { numRuns: 400, examples: [[-32001, { reason: undefined, data: undefined }, 200, 'JSONRPC'], [-32001, { reason: 'TASK_NOT_FOUND', data: [errorInfo('TASK_NOT_FOUND')] }, 200, 'JSONRPC'], [-32602, { reason: undefined, data: undefined }, 200, 'JSONRPC'], [-32001, { reason: undefined, data: undefined }, 403, 'JSONRPC'], [-32001, { reason: undefined, data: undefined }, 404, 'HTTP+JSON 0.3']] },
    );
  });

  it('HTTP+JSON 1.0: a 404 or a TASK_NOT_FOUND reason is no refusal of a send naming no task; the rest as before', () => {
    fc.assert(
      fc.property(fc.integer({ min: 300, max: 599 }), reasonArb, fc.boolean(), (status, reason, withStatusName) => {
        const error = httpJsonError(status, reason, withStatusName);
        const credentials = status === 401 || status === 403;
        const expected = credentials || (statusRefuses(status) && refusalReason(reason) && reason !== 'TASK_NOT_FOUND') ? 'none' : 'maybe';
        expect(sendEffectOf(error, noTask), `HTTP ${status} reason ${reason}: ${error.name}`).toBe(expected);
      }),
      { numRuns: 400, examples: [[404, 'TASK_NOT_FOUND', true], [404, undefined, false], [400, 'TASK_NOT_FOUND', false], [400, 'INVALID_PARAMS', false], [401, 'TASK_NOT_FOUND', false]] },
    );
  });

  it('gRPC: NOT_FOUND, or a TASK_NOT_FOUND reason, is no refusal of a send naming no task; the rest as before', () => {
    const refusing = new Set([3, 5, 7, 9, 11, 12, 16]);
    const credentials = new Set([7, 16]);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 20 }), reasonArb, (code, reason) => {
        const error = errorFromGrpc(grpcFailure(code, reason), 'http://agent.test');
        // A known reason names the error (on a refusing status); else the status does (NOT_FOUND: TaskNotFound).
        const named = reason !== undefined && REASONS.includes(reason) ? reason : code === 5 ? 'TASK_NOT_FOUND' : undefined;
        // The refusal is spoken by the spec's reason in the ErrorInfo, or by a credentials status (grpcstatus).
        const spoken = refusalReason(reason) || credentials.has(code);
        const expected = refusing.has(code) && spoken && (named === undefined || (!MAYBE_REASONS.has(named) && named !== 'TASK_NOT_FOUND')) ? 'none' : 'maybe';
        expect(sendEffectOf(error, noTask), `gRPC ${code} reason ${reason}: ${error.name}`).toBe(expected);
      }),
      { numRuns: 300, examples: [[5, 'TASK_NOT_FOUND'], [5, undefined], [5, 'INVALID_PARAMS'], [3, 'TASK_NOT_FOUND'], [3, undefined], [3, 'INVALID_PARAMS'], [16, 'TASK_NOT_FOUND'], [16, undefined]] },
    );
  });
});
