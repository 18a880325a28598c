/**
 * Interop matrix, gRPC column: our `GrpcTransport` (1.0 and 0.3) against
 * @a2a-js/sdk's gRPC servers on port 0: sdk 1.3.0 (1.0), sdk 1.3.0 with its 0.3
 * gRPC service (legacy mode), sdk 0.3.14. The interface is picked from each
 * agent's card, which lists only gRPC. Same scenarios as test/interop/matrix.test.ts
 * (test/harness/interop-matrix.ts), with what gRPC adds; results in docs/interop.md.
 */
import { expect } from 'vitest';
import { bearerToken, createTransport, selectInterface } from '@durable-a2a/a2a';
import { grpcTransports } from '@durable-a2a/a2a/grpc';
import { scripted } from '../harness/interop.ts';
import { type MatrixCell, describeMatrixCell } from '../harness/interop-matrix.ts';
import { startGrpcAgent } from '../harness/grpc-agent.ts';

const CELLS: MatrixCell[] = [
  { binding: 'GRPC', version: '1.0', sdk: '1.3.0', start: () => startGrpcAgent({ behaviour: scripted }) },
  { binding: 'GRPC', version: '1.0', sdk: '1.3.0 legacyCompat', start: () => startGrpcAgent({ behaviour: scripted, flavour: 'legacyCompat' }) },
  { binding: 'GRPC', version: '0.3', sdk: '1.3.0 legacyCompat', start: () => startGrpcAgent({ behaviour: scripted, flavour: 'legacyCompat' }) },
  { binding: 'GRPC', version: '0.3', sdk: '0.3.14', start: () => startGrpcAgent({ behaviour: scripted, flavour: 'v03' }) },
];

for (const cell of CELLS) {
  describeMatrixCell(cell, (card, { version }) => {
    const agentInterface = selectInterface(card, { transports: grpcTransports, versions: [version] });
    expect(agentInterface).toMatchObject({ protocolBinding: 'GRPC', protocolVersion: version });
    const transport = createTransport(agentInterface!, { transports: grpcTransports, credentials: bearerToken('grpc-secret') });
    expect(transport.binding).toBe('GRPC');
    return transport;
  });
}
