/**
 * The gRPC binding (spec §10): registers `GRPC` 1.0 with the transport factory
 * on import, like the 0.3 adapter in `v03/`.
 */
import { registerTransport } from '../client.ts';
import { GrpcTransport } from './transport.ts';

registerTransport('GRPC', '1.0', (agentInterface, options) => new GrpcTransport(agentInterface, options));

export { GrpcTransport, type GrpcTransportOptions, type GrpcWireMapping } from './transport.ts';
export { GRPC_STATUS_TABLE, errorFromGrpc } from './status-table.ts';
export { grpcEndpoint, type GrpcEndpoint } from './channel.ts';
