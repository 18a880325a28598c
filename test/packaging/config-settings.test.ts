/**
 * The new settings reach the fleet options: `DA2A_ATTEMPT_DEADLINE_MS` and the `DA2A_LIMIT_*` input
 * limits (unset ones keep their defaults; a bad value is refused at start-up, naming the variable), and the address
 * policy's switches (`ADDRESS_POLICY_VARIABLES`).
 */
import { describe, expect, it } from 'vitest';
import { ADDRESS_POLICY_VARIABLES, addressPolicyFrom } from '@durable-a2a/a2a';
import { ServerEnvironmentSchema } from '@durable-a2a/producer/server';
import { WorkerEnvironmentSchema, fleetOptionsFrom, parseWorkerEnvironment } from '../../packages/workers/src/config.ts';
import { compileFleetOptions } from '../../packages/workers/src/options.ts';

describe('attempt deadline and limits from the environment', () => {
  it('DA2A_ATTEMPT_DEADLINE_MS and DA2A_LIMIT_* are passed to the fleet; unset limits stay defaults', () => {
    const options = fleetOptionsFrom(parseWorkerEnvironment({ DA2A_ATTEMPT_DEADLINE_MS: '60000', DA2A_LIMIT_AGENT_CARD_BYTES: '2048', DA2A_LIMIT_JSON_DEPTH: '32', DA2A_LIMIT_ARTIFACTS_PER_DELEGATION: '200' }));
    expect(options.attemptDeadlineMs).toBe(60_000);
    expect(options.limits).toEqual({ agentCardBytes: 2048, jsonDepth: 32, artifactsPerDelegation: 200 });
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

describe('the address policy from the environment', () => {
  it('both executables read each switch under the name a refusal tells a person to set', () => {
    const set = { [ADDRESS_POLICY_VARIABLES.allowLoopback]: 'true', [ADDRESS_POLICY_VARIABLES.allowPrivate]: '1', [ADDRESS_POLICY_VARIABLES.allowedHosts]: 'a.example, b.example' };
    const expected = { allowLoopback: true, allowPrivate: true, allowedHosts: ['a.example', 'b.example'] };
    expect(fleetOptionsFrom(parseWorkerEnvironment(set)).addressPolicy).toEqual(expected);
    expect(addressPolicyFrom(ServerEnvironmentSchema.parse({ ...set, DA2A_API_TOKENS: 't'.repeat(32) }))).toEqual(expected);
    expect(fleetOptionsFrom(parseWorkerEnvironment({})).addressPolicy).toEqual({ allowLoopback: false, allowPrivate: false, allowedHosts: [] });
  });
});

describe('durations past Node timer range (about 24.8 days) in the environment', () => {
  const TOO_LONG = String(2 ** 31);
  const MONTH = String(30 * 24 * 3600 * 1000);
  /** Every duration variable of a schema: its name ends in _MS. */
  const durations = (shape: Record<string, unknown>) => Object.keys(shape).filter((name) => name.endsWith('_MS'));

  it('every worker duration a timer waits for refuses 2^31 ms, naming the variable; the attempt deadline and the life of an answer link take a month', () => {
    const names = durations(WorkerEnvironmentSchema.shape);
    expect(names.length).toBeGreaterThan(15);
    for (const name of names) {
      // The attempt deadline's timers wait in hops (setLongTimeout); an answer link's life is a signed expiry, no timer.
      if (name === 'DA2A_ATTEMPT_DEADLINE_MS' || name === 'DA2A_ANSWER_LINK_TTL_MS') continue;
      expect(() => parseWorkerEnvironment({ [name]: TOO_LONG }), name).toThrow(name);
    }
    expect(() => parseWorkerEnvironment({ DA2A_REQUEST_TIMEOUT_MS: TOO_LONG })).toThrow(/24\.8 days/);
    expect(fleetOptionsFrom(parseWorkerEnvironment({ DA2A_ATTEMPT_DEADLINE_MS: MONTH })).attemptDeadlineMs).toBe(Number(MONTH));
    expect(parseWorkerEnvironment({ DA2A_ANSWER_LINK_TTL_MS: MONTH }).DA2A_ANSWER_LINK_TTL_MS).toBe(Number(MONTH));
  });

  it('every server duration a timer waits for refuses 2^31 ms', () => {
    const names = durations(ServerEnvironmentSchema.shape).filter((name) => name !== 'DA2A_ANSWER_LINK_TTL_MS');
    expect(names.length).toBeGreaterThan(5);
    for (const name of names) expect(ServerEnvironmentSchema.safeParse({ [name]: TOO_LONG }).success, name).toBe(false);
  });
});

describe('durations past Node timer range in startFleet options', () => {
  it('every timer duration option refuses 2^31 ms, NaN and a negative value, naming the option; the attempt deadline takes a month', () => {
    const names = ['requestTimeoutMs', 'streamIdleTimeoutMs', 'noProgressWindowMs', 'slowPollAfterMs', 'slowPollMs', 'streamQuietMs', 'retryAfterMaxMs', 'slotWaitMs', 'pauseCheckMs', 'reconcileIntervalMs', 'searchMarginMs', 'notFoundWindowMs', 'parkedPollMs', 'pushFallbackPollMs', 'agentRefreshMs', 'lockDurationMs', 'stalledIntervalMs', 'livenessTtlMs'];
    for (const name of names) {
      for (const value of [2 ** 31, Number.NaN, -1]) expect(() => compileFleetOptions({ redis: 'redis://127.0.0.1:1', [name]: value }), `${name} ${value}`).toThrow(new RegExp(`${name}.*timer range`));
      expect(compileFleetOptions({ redis: 'redis://127.0.0.1:1', [name]: 2 ** 31 - 1 })[name as 'slowPollMs']).toBe(2 ** 31 - 1);
    }
    expect(compileFleetOptions({ redis: 'redis://127.0.0.1:1', attemptDeadlineMs: 30 * 24 * 3600 * 1000 }).attemptDeadlineMs).toBe(30 * 24 * 3600 * 1000);
  });
});
