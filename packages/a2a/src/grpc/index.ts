/**
 * `@durable-a2a/a2a/grpc`: the gRPC binding (spec §10) for A2A 1.0 and 0.3. Pass `grpcTransports` next to
 * `defaultTransports` wherever transports are chosen:
 *
 * ```ts
 * import { createTransport, defaultTransports } from '@durable-a2a/a2a';
 * import { grpcTransports } from '@durable-a2a/a2a/grpc';
 * const transport = createTransport(agentInterface, { transports: [...defaultTransports, ...grpcTransports] });
 * ```
 *
 * Importing this entry loads neither grpc-js nor the protobuf codec: the transport loads them on its first call
 * (see `lazy.ts`).
 */
import type { TransportFactory } from '../client.ts';
import { LazyGrpcTransport } from './lazy.ts';

/** gRPC for A2A 1.0 and 0.3, each transport loading `@grpc/grpc-js` and the codec on its first call. */
export const grpcTransports: readonly TransportFactory[] = Object.freeze([
  { protocolBinding: 'GRPC', protocolVersion: '1.0', create: (agentInterface, options) => new LazyGrpcTransport(agentInterface, options, '1.0') },
  { protocolBinding: 'GRPC', protocolVersion: '0.3', create: (agentInterface, options) => new LazyGrpcTransport(agentInterface, options, '0.3') },
] satisfies TransportFactory[]);

export { LazyGrpcTransport as GrpcTransport } from './lazy.ts';
export type { GrpcTransportOptions } from './transport.ts';
