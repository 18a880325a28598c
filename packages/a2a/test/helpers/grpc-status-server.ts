/**
 * A grpc-js server of the A2A service whose unary methods all answer one scripted status (no handler runs): the status
 * code and what its `grpc-status-details-bin` trailer carries. Shared by the gRPC status property tests.
 */
import { create, toBinary } from '@bufbuild/protobuf';
import { Metadata, Server, ServerCredentials, type ServiceError, type UntypedServiceImplementation } from '@grpc/grpc-js';
import { messageType } from '../../src/grpc/codec.ts';

/** What the details trailer holds: nothing, an empty `google.rpc.Status`, an ErrorInfo (alone or after another detail), or bytes no one decodes. */
export type StatusDetailsShape = 'bare' | 'Status without details' | 'ErrorInfo' | 'another detail, then ErrorInfo' | 'undecodable details';

/** One scripted status: `code` (`google.rpc.Code`), the trailer's `shape`, and the ErrorInfo's `reason` and `domain`. */
export interface ScriptedStatus {
  code: number;
  shape: StatusDetailsShape;
  reason: string;
  domain: string;
}

/** The `grpc-status-details-bin` trailer of `status` (undefined when bare). */
export function detailsTrailer({ code, shape, reason, domain }: ScriptedStatus): Buffer | undefined {
  if (shape === 'bare') return undefined;
  if (shape === 'undecodable details') return Buffer.from([0xff, 0xff, 0xff, 0x0f, 0x01]);
  const statusType = messageType('google.rpc.Status');
  const infoType = messageType('google.rpc.ErrorInfo');
  const errorInfoAny = { typeUrl: 'type.googleapis.com/google.rpc.ErrorInfo', value: toBinary(infoType, create(infoType, { reason, domain } as never)) };
  const debugInfoAny = { typeUrl: 'type.googleapis.com/google.rpc.DebugInfo', value: new Uint8Array([0x12, 0x02, 0x6e, 0x6f]) };
  const details = shape === 'ErrorInfo' ? [errorInfoAny] : shape === 'another detail, then ErrorInfo' ? [debugInfoAny, errorInfoAny] : [];
  return Buffer.from(toBinary(statusType, create(statusType, { code, message: 'refused', details } as never)));
}

/** Starts the server on 127.0.0.1, port 0, serving `methods` (names of `lf.a2a.v1.A2AService`), each answering `current()`. */
export async function startStatusServer(methods: readonly string[], current: () => ScriptedStatus): Promise<{ url: string; close: () => void }> {
  const server = new Server();
  const answerWithStatus = (_call: unknown, callback: (error: Partial<ServiceError>) => void) => {
    const status = current();
    const metadata = new Metadata();
    const trailer = detailsTrailer(status);
    if (trailer) metadata.set('grpc-status-details-bin', trailer);
    callback({ code: status.code, details: `status ${status.code}`, metadata });
  };
  const identity = (value: Buffer) => value;
  const method = (name: string) => ({ path: `/lf.a2a.v1.A2AService/${name}`, requestStream: false, responseStream: false, requestSerialize: identity, requestDeserialize: identity, responseSerialize: identity, responseDeserialize: identity });
  server.addService(Object.fromEntries(methods.map((name) => [name, method(name)])), Object.fromEntries(methods.map((name) => [name, answerWithStatus])) as UntypedServiceImplementation);
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))));
  return { url: `http://127.0.0.1:${port}`, close: () => server.forceShutdown() };
}
