/**
 * Interop matrix: our transports ({JSON-RPC, HTTP+JSON} × {1.0, 0.3}) against
 * independently written servers on port 0: @a2a-js/sdk 1.3.0 (1.0, and 0.3 via
 * its `legacyCompat` mode) and @a2a-js/sdk 0.3.14. The interface is picked from
 * each agent's card. The scenarios are test/harness/interop-matrix.ts's; results
 * are summarized in docs/interop.md.
 */
import { expect } from 'vitest';
import { createTransport, selectInterface } from '@durable-a2a/a2a';
import { startDemoAgent } from '../harness/index.ts';
import { scripted } from '../harness/interop.ts';
import { type MatrixCell, describeMatrixCell } from '../harness/interop-matrix.ts';
import { startLegacyCompatAgent, startV03Agent } from '../harness/agent-v03.ts';

const CELLS: MatrixCell[] = [
  { binding: 'JSONRPC', version: '1.0', sdk: '1.3.0', start: () => startDemoAgent({ behaviour: scripted }) },
  { binding: 'HTTP+JSON', version: '1.0', sdk: '1.3.0', start: () => startDemoAgent({ behaviour: scripted }) },
  { binding: 'JSONRPC', version: '0.3', sdk: '1.3.0 legacyCompat', start: () => startLegacyCompatAgent({ behaviour: scripted }) },
  { binding: 'HTTP+JSON', version: '0.3', sdk: '1.3.0 legacyCompat', start: () => startLegacyCompatAgent({ behaviour: scripted }) },
  { binding: 'JSONRPC', version: '0.3', sdk: '0.3.14', start: () => startV03Agent({ behaviour: scripted }) },
  { binding: 'HTTP+JSON', version: '0.3', sdk: '0.3.14', start: () => startV03Agent({ behaviour: scripted }) },
];

for (const cell of CELLS) {
  describeMatrixCell(cell, (card, { binding, version }, name) => {
    const agentInterface = selectInterface(card, { bindings: [binding], versions: [version] });
    if (!agentInterface) throw new Error(`${name}: card lists no such interface`);
    const transport = createTransport(agentInterface);
    expect(transport.protocolVersion).toBe(version);
    return transport;
  });
}
