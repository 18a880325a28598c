/**
 * The new settings reach the fleet options: `DA2A_ATTEMPT_DEADLINE_MS` and the `DA2A_LIMIT_*` input
 * limits (unset ones keep their defaults; a bad value is refused at start-up, naming the variable).
 */
import { describe, expect, it } from 'vitest';
import { fleetOptionsFrom, parseWorkerEnvironment } from '../../packages/workers/src/config.ts';
import { compileFleetOptions } from '../../packages/workers/src/options.ts';

describe('attempt deadline and limits from the environment', () => {
  it('DA2A_ATTEMPT_DEADLINE_MS and DA2A_LIMIT_* are passed to the fleet; unset limits stay defaults', () => {
    const options = fleetOptionsFrom(parseWorkerEnvironment({ DA2A_ATTEMPT_DEADLINE_MS: '60000', DA2A_LIMIT_AGENT_CARD_BYTES: '2048', DA2A_LIMIT_JSON_DEPTH: '32' }));
    expect(options.attemptDeadlineMs).toBe(60_000);
    expect(options.limits).toEqual({ agentCardBytes: 2048, jsonDepth: 32 });
  });

  it('defaults: 24 h per attempt, no overrides', () => {
    const compiled = compileFleetOptions(fleetOptionsFrom(parseWorkerEnvironment({})));
    expect(compiled.attemptDeadlineMs).toBe(86_400_000);
    expect(compiled.limits).toEqual({});
  });

  it('a limit that is not a positive integer is refused, naming the variable', () => {
    expect(() => parseWorkerEnvironment({ DA2A_LIMIT_PARTS_PER_MESSAGE: '-1' })).toThrow(/DA2A_LIMIT_PARTS_PER_MESSAGE/);
  });
});
