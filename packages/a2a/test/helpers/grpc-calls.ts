/** Shared set-up of the gRPC size-refusal tests: one transport per test, one call's error. */
import { GrpcTransport } from '../../src/grpc/transport.ts';

/** A gRPC call the tests make: SendMessage or GetTask. */
export type GrpcCall = 'send' | 'get';

/**
 * Runs `body` with a gRPC transport to `url` whose own receive cap is `cap` characters (5 s per request), closed after
 * it whatever `body` did.
 */
export async function withGrpcTransport(url: string, cap: number, body: (transport: GrpcTransport) => Promise<void>): Promise<void> {
  const transport = new GrpcTransport({ url, protocolBinding: 'GRPC', protocolVersion: '1.0' }, { requestTimeoutMs: 5_000, maxEventSizeChars: cap });
  try {
    await body(transport);
  } finally {
    transport.close();
  }
}

/**
 * The error one call ends with (undefined when it succeeded): SendMessage of one text part `text` (messageId M1), or
 * GetTask of the task id `text`.
 */
export function callError(transport: GrpcTransport, call: GrpcCall, text: string): Promise<unknown> {
  const request = call === 'send' ? transport.sendMessage({ message: { messageId: 'M1', role: 'ROLE_USER', parts: [{ text }] } }) : transport.getTask({ id: text });
  return request.then(() => undefined, (caught: unknown) => caught);
}
