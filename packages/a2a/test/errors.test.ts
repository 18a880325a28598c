/** The error table: every JSON-RPC code and ErrorInfo reason maps to its class. */
import { describe, expect, it } from 'vitest';
import { errorFromHttp, errorFromJsonRpc } from '../src/error-mapping.ts';
import {
  A2AError,
  AuthenticationError,
  ContentTypeNotSupportedError,
  ExtendedAgentCardNotConfiguredError,
  ExtensionSupportRequiredError,
  InternalAgentError,
  InvalidAgentResponseError,
  InvalidParamsError,
  InvalidRequestError,
  JsonRpcParseError,
  MethodNotFoundError,
  ProtocolError,
  PushNotificationNotSupportedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
  UpstreamError,
  VersionNotSupportedError,
  isRetryable,
  sendEffectOf,
  ConflictError,
} from '../src/errors.ts';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { GRPC_STATUS_TABLE } from '../src/grpc/status-table.ts';

const A2A_ROWS = [
  [-32001, 404, 'TASK_NOT_FOUND', TaskNotFoundError],
  [-32002, 400, 'TASK_NOT_CANCELABLE', TaskNotCancelableError],
  [-32003, 400, 'PUSH_NOTIFICATION_NOT_SUPPORTED', PushNotificationNotSupportedError],
  [-32004, 400, 'UNSUPPORTED_OPERATION', UnsupportedOperationError],
  [-32005, 400, 'CONTENT_TYPE_NOT_SUPPORTED', ContentTypeNotSupportedError],
  [-32006, 500, 'INVALID_AGENT_RESPONSE', InvalidAgentResponseError],
  [-32007, 400, 'EXTENDED_AGENT_CARD_NOT_CONFIGURED', ExtendedAgentCardNotConfiguredError],
  [-32008, 400, 'EXTENSION_SUPPORT_REQUIRED', ExtensionSupportRequiredError],
  [-32009, 400, 'VERSION_NOT_SUPPORTED', VersionNotSupportedError],
  [-32602, 400, 'INVALID_PARAMS', InvalidParamsError],
] as const;

const errorInfo = (reason: string) => [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'a2a-protocol.org' }];

describe('errorFromJsonRpc', () => {
  it.each(A2A_ROWS)('JSON-RPC %i (HTTP %i, %s)', (code, _status, reason, errorClass) => {
    const raw = JSON.stringify({ jsonrpc: '2.0', id: 1, error: { code, message: 'm', data: errorInfo(reason) } });
    const error = errorFromJsonRpc({ code, message: 'm', data: errorInfo(reason) }, raw);
    expect(error).toBeInstanceOf(errorClass);
    expect(error).toMatchObject({ jsonRpcCode: code, reason, retryable: false, message: 'm' });
    expect(error.cause).toBe(raw);
  });

  it.each([
    [-32700, JsonRpcParseError, false],
    [-32600, InvalidRequestError, false],
    [-32601, MethodNotFoundError, false],
    [-32602, InvalidParamsError, false],
    [-32603, InternalAgentError, true],
  ] as const)('standard code %i', (code, errorClass, retryable) => {
    const error = errorFromJsonRpc({ code, message: 'x' }, '{}');
    expect(error).toBeInstanceOf(errorClass);
    expect(error.retryable).toBe(retryable);
  });

  it.each([502, 503, 504, 429, 500])('proxy-style HTTP code %i inside the envelope -> retryable UpstreamError', (code) => {
    const error = errorFromJsonRpc({ code, message: 'Bad Gateway' }, '{}');
    expect(error).toBeInstanceOf(UpstreamError);
    expect(isRetryable(error)).toBe(true);
  });

  it('unknown code: reason decides, else A2A range is internal, else protocol error', () => {
    expect(errorFromJsonRpc({ code: -32050, data: errorInfo('TASK_NOT_FOUND') }, '{}')).toBeInstanceOf(TaskNotFoundError);
    expect(errorFromJsonRpc({ code: -32050 }, '{}')).toBeInstanceOf(InternalAgentError);
    expect(errorFromJsonRpc({ code: 7 }, '{}')).toBeInstanceOf(ProtocolError);
    expect(errorFromJsonRpc('nonsense', 'nonsense')).toBeInstanceOf(ProtocolError);
  });
});

describe('errorFromHttp', () => {
  it.each(A2A_ROWS)('ErrorInfo for %i (HTTP %i, %s)', (_code, status, reason, errorClass) => {
    const body = JSON.stringify({ error: { code: status, status: 'FAILED_PRECONDITION', message: 'm', details: errorInfo(reason) } });
    const error = errorFromHttp(status, 'application/json', body);
    expect(error).toBeInstanceOf(errorClass);
    expect(error).toMatchObject({ httpStatus: status, reason });
  });

  it('reason wins over status: 400 + TASK_NOT_CANCELABLE is not a generic 400', () => {
    const body = JSON.stringify({ error: { code: 400, message: 'm', details: errorInfo('TASK_NOT_CANCELABLE') } });
    expect(errorFromHttp(400, 'application/a2a+json', body)).toBeInstanceOf(TaskNotCancelableError);
    expect(errorFromHttp(400, 'application/json', JSON.stringify({ error: { code: 400, message: 'm' } }))).toBeInstanceOf(InvalidRequestError);
  });

  it('an HTML 502 page from a proxy -> retryable UpstreamError with an excerpt', () => {
    const error = errorFromHttp(502, 'text/html', '<html><body><h1>502 Bad Gateway</h1></body></html>');
    expect(error).toBeInstanceOf(UpstreamError);
    expect(error.retryable).toBe(true);
    expect(error.bodyExcerpt).toContain('502 Bad Gateway');
  });

  it.each([503, 504, 429])('%i without a body is retryable', (status) => {
    expect(isRetryable(errorFromHttp(status, undefined, ''))).toBe(true);
  });

  it('401/403 -> AuthenticationError, not retryable; HTML 404 -> ProtocolError, not TaskNotFound', () => {
    expect(errorFromHttp(401, 'application/json', '{}')).toBeInstanceOf(AuthenticationError);
    expect(isRetryable(errorFromHttp(403, 'text/plain', 'no'))).toBe(false);
    expect(errorFromHttp(404, 'text/html', '<html>Cannot POST</html>')).toBeInstanceOf(ProtocolError);
  });

  it('a JSON-RPC envelope on an error status is decoded as JSON-RPC', () => {
    expect(errorFromHttp(500, 'application/json', JSON.stringify({ jsonrpc: '2.0', id: 1, error: { code: -32001, message: 'x' } }))).toBeInstanceOf(TaskNotFoundError);
  });

  it('every error is an A2AError with a stable code', () => {
    const error = errorFromHttp(404, 'application/json', JSON.stringify({ error: { code: 404, details: errorInfo('TASK_NOT_FOUND') } }));
    expect(error).toBeInstanceOf(A2AError);
    expect(error.code).toBe('TASK_NOT_FOUND');
    expect(error.name).toBe('TaskNotFoundError');
    expect(isRetryable(new Error('x'))).toBe(false);
  });
});

describe('sendEffectOf: a conflict never proves nothing was created', () => {
  it('HTTP 409 (any body), a google.rpc.Status ALREADY_EXISTS, JSON-RPC code 409, gRPC ALREADY_EXISTS: effect maybe (ConflictError when the body is an error)', () => {
    for (const body of [JSON.stringify({ error: 'a task for this message already exists' }), '<h1>Conflict</h1>']) expect(sendEffectOf(errorFromHttp(409, 'application/json', body))).toBe('maybe');
    const answers = [
      errorFromHttp(409, 'application/json', JSON.stringify({ error: { code: 409, status: 'ALREADY_EXISTS', message: 'duplicate' } })),
      errorFromHttp(400, 'application/json', JSON.stringify({ error: { code: 400, message: 'duplicate', details: errorInfo('ALREADY_EXISTS') } })),
      errorFromJsonRpc({ code: 409, message: 'duplicate message' }, '{}'),
    ];
    for (const error of answers) {
      expect(error, error.message).toBeInstanceOf(ConflictError);
      expect(sendEffectOf(error), error.message).toBe('maybe');
      expect(isRetryable(error)).toBe(false);
    }
    const Grpc = GRPC_STATUS_TABLE.get(GrpcStatus.ALREADY_EXISTS)!;
    expect(sendEffectOf(new Grpc('exists'))).toBe('maybe');
  });

  it('a plain 4xx (no A2A error body) proves delivery, not that nothing was created: maybe, but 401/403 (credentials refused); fourohfour', () => {
    // Before, every plain 4xx but 408/409/429 was a wrong URL's page: an agent that booked and answered 404 was re-delegated.
    for (let status = 400; status < 500; status++) {
      const error = errorFromHttp(status, 'text/html', '<h1>no</h1>');
      expect(sendEffectOf(error), String(status)).toBe([401, 403].includes(status) ? 'none' : 'maybe');
    }
  });
});
