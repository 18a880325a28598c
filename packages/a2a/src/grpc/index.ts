/**
 * The gRPC binding (spec §10): registers `GRPC` 1.0 and 0.3 (`v03.ts`) with
 * the transport factory on import. Importing this file loads neither grpc-js
 * nor the protobuf codec (see `lazy.ts`); import `transport.ts`,
 * `status-table.ts` or `channel.ts` directly for the binding's internals.
 */
import { registerTransport } from '../client.ts';
import { LazyGrpcTransport } from './lazy.ts';

registerTransport('GRPC', '1.0', (agentInterface, options) => new LazyGrpcTransport(agentInterface, options, '1.0'));
registerTransport('GRPC', '0.3', (agentInterface, options) => new LazyGrpcTransport(agentInterface, options, '0.3'));

export { LazyGrpcTransport as GrpcTransport } from './lazy.ts';
export type { GrpcTransportOptions } from './transport.ts';
