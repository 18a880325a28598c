/**
 * The crash windows of test/topology/crash-recovery.test.ts against an agent whose card
 * offers only gRPC: real worker processes SIGKILLed at a named crash point, a
 * fresh fleet recovering from the journal alone, over the gRPC transport (the
 * journaled interface is GRPC 1.0).
 */
import { describe } from 'vitest';
import { completesWith } from '../harness/agent-behaviours.ts';
import { startGrpcAgent } from '../harness/grpc-agent.ts';
import { sendCrashWindowCases, useCrashScene } from '../harness/crash-scene.ts';

const scene = useCrashScene({
  prefix: 'grpccrash',
  startAgents: () => startGrpcAgent({ behaviour: completesWith('done', { delayMs: 300 }) }),
  stopAgents: (agent) => agent.stop(),
});

describe('crash recovery over gRPC', () => {
  sendCrashWindowCases(scene, { keyPrefix: 'grpc-window', via: 'over gRPC', agentInterface: { protocolBinding: 'GRPC', protocolVersion: '1.0' } });
});
