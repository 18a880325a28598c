/**
 * The gRPC binding (spec §10): registers `GRPC` 1.0 and 0.3 (`v03.ts`) with
 * the transport factory on import.
 */
import { registerTransport } from '../client.ts';
import { GrpcTransport } from './transport.ts';
import { GRPC_V03_MAPPING } from './v03.ts';

registerTransport('GRPC', '1.0', (agentInterface, options) => new GrpcTransport(agentInterface, options));
registerTransport('GRPC', '0.3', (agentInterface, options) => new GrpcTransport(agentInterface, options, GRPC_V03_MAPPING));

export { GrpcTransport, type GrpcTransportOptions, type GrpcWireMapping } from './transport.ts';
export { GRPC_STATUS_TABLE, errorFromGrpc } from './status-table.ts';
export { grpcEndpoint, type GrpcEndpoint } from './channel.ts';
export { GRPC_V03_MAPPING } from './v03.ts';
