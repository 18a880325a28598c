/**
 * Kind: delivery claimed for a request that never left. An error thrown before a request leaves this process (the
 * address policy's refusal at discovery or at connection time, a card URL we cannot use, a request a binding cannot
 * carry or encode) must say `not-sent`: the workers read `received` or `maybe` as "the agent may have it" (new-user
 * report: BlockedAddressError carried `received` because it names a reason). Its hint names the library option and
 * the executables' variable.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { ALLOWING_OPTION, BlockedAddressError, checkUrl, createPolicyDispatcher, type ResolvedAddress } from '../src/address-policy.ts';
import { AgentCardError, fetchAgentCard } from '../src/card.ts';
import { createHttpClient } from '../src/http.ts';
import { deliveryOf } from '../src/errors.ts';
import { grpcEndpoint } from '../src/grpc/channel.ts';
import { GRPC_V03_MAPPING } from '../src/grpc/v03.ts';

/** Refused addresses by category (no socket is ever opened to them: the policy refuses first). */
const REFUSED: Record<string, string[]> = {
  loopback: ['127.0.0.1', '127.9.8.7', '::1'],
  private: ['10.0.0.5', '192.168.1.20', '172.16.4.4', '100.64.0.1', 'fd00::1'],
  'link-local': ['169.254.1.1', 'fe80::1'],
  metadata: ['169.254.169.254', '100.100.100.200'],
  unspecified: ['0.0.0.0'],
};
const refusedAddress = fc.constantFrom(...Object.values(REFUSED).flat());
const urlOf = (address: string, port: number, path: string): string => `http://${address.includes(':') ? `[${address}]` : address}:${port}/${path}`;
/** A host name that resolves (injected DNS) to the refused address. */
const lookupTo = (address: string) => async (): Promise<ResolvedAddress[]> => [{ address, family: address.includes(':') ? 6 : 4 }];

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe('errors thrown before a request leaves say not-sent', () => {
  it('case: a loopback agent refused by the policy (the new user\'s quick start) is not-sent, and its hint names the variable', async () => {
    const error = await rejection(checkUrl('http://127.0.0.1:4000/.well-known/agent-card.json'));
    expect(error).toBeInstanceOf(BlockedAddressError);
    expect(deliveryOf(error)).toBe('not-sent');
    expect((error as Error).message).toContain('addressPolicy.allowLoopback');
    expect((error as Error).message).toContain('DA2A_ALLOW_LOOPBACK=true');
    const card = await rejection(fetchAgentCard('http://127.0.0.1:4000/', { addressPolicy: {} }));
    expect(card).toMatchObject({ reason: 'BLOCKED_ADDRESS', delivery: 'not-sent' });
  });

  it('property: every refused address, literal or behind a host name, at discovery, card fetch or connection time, is not-sent', async () => {
    await fc.assert(
      fc.asyncProperty(refusedAddress, fc.boolean(), fc.integer({ min: 1, max: 65_535 }), fc.constantFrom('check', 'card', 'connect'), async (address, named, port, where) => {
        const url = urlOf(named ? 'agent.test' : address, port, 'x');
        const policy = { lookup: lookupTo(address) };
        const error =
          where === 'check'
            ? await rejection(checkUrl(url, policy))
            : where === 'card'
              ? await rejection(fetchAgentCard(url, { addressPolicy: policy }))
              : await rejection(createHttpClient({ dispatcher: createPolicyDispatcher(policy), requestTimeoutMs: 5_000 }).request({ method: 'POST', url, body: '{}' }));
        expect(deliveryOf(error)).toBe('not-sent');
        const blocked = error instanceof BlockedAddressError ? error : (error as Error).cause;
        expect(blocked).toBeInstanceOf(BlockedAddressError);
        const option = ALLOWING_OPTION[(blocked as BlockedAddressError).category];
        if (option) expect((blocked as Error).message).toContain(`addressPolicy.${option}`);
        expect((blocked as Error).message.includes('DA2A_ALLOWED_AGENT_HOSTS=<host>')).toBe(option !== undefined);
      }),
      { numRuns: 40, examples: [['127.0.0.1', false, 4000, 'connect'], ['::1', true, 80, 'card'], ['169.254.169.254', false, 80, 'check']] },
    );
  });

  it('property: requests refused by the URL alone or by the binding (scheme, card URL, gRPC endpoint, 0.3 methods) are not-sent', () => {
    const local = fc.oneof(
      fc.webUrl().map((url) => () => new AgentCardError('INVALID_URL', `not an http(s) URL: ${url.replace(/^https?/, 'ftp')}`)),
      fc.webUrl().map((url) => () => grpcEndpoint(url.replace(/^https?/, 'ftp'))),
      fc.constant(() => GRPC_V03_MAPPING.methodName('ListTasks')),
      fc.constant(() => new AgentCardError('BLOCKED_ADDRESS', 'blocked')),
    );
    fc.assert(
      fc.property(local, (make) => {
        let error: unknown;
        try {
          error = make();
        } catch (thrown) {
          error = thrown;
        }
        expect(deliveryOf(error)).toBe('not-sent');
      }),
      { numRuns: 50 },
    );
    // An answer is still `received`: a card that arrived and was refused.
    expect(new AgentCardError('INVALID_CARD', 'agent card invalid', { httpStatus: 200 }).delivery).toBe('received');
  });
});
