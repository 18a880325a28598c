/**
 * The pure parts of the page for people, by kind (docs/people.md), with properties over every input:
 * - a session cookie is accepted only as made: any change to its expiry, id or MAC, another token, or an expired
 *   one is refused; a signed-out id is refused;
 * - where a sign-in leads (`next`) is always a path of /ui or Bull Board, never another site;
 * - the outcome heading: a workflow cancelled on request and fully undone is never headed as a failure, and every
 *   finished state has its own heading.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Sessions } from '../../packages/producer/src/server/session.ts';
import { safeNext } from '../../packages/producer/src/server/ui/sign-in-page.ts';
import { outcomeOf } from '../../packages/producer/src/server/ui/outcome.ts';

const TOKEN = 'token-of-the-tests-0123456789';

describe('session cookies', () => {
  it('a made session is accepted; one changed character, another token, expiry or sign-out refuses it', () => {
    let now = 1_000_000;
    const sessions = new Sessions([TOKEN], { now: () => now });
    const { value } = sessions.create(TOKEN);
    expect(sessions.check(value)).toBeDefined();
    fc.assert(
      fc.property(fc.nat({ max: value.length - 1 }), fc.constantFrom(...'0123456789ABCabc_-.'), (index, char) => {
        fc.pre(value[index] !== char);
        const changed = `${value.slice(0, index)}${char}${value.slice(index + 1)}`;
        expect(sessions.check(changed)).toBeUndefined();
      }),
      { numRuns: 300 },
    );
    expect(new Sessions(['another-token-0123456789'], { now: () => now }).check(value)).toBeUndefined();
    expect(new Sessions([TOKEN], { now: () => now, secret: 'a different secret value' }).check(value)).toBeUndefined();
    now += 8 * 3600 * 1000;
    expect(sessions.check(value)).toBeUndefined();
    now -= 1;
    const session = sessions.check(value)!;
    sessions.revocations.revoke(session, now);
    expect(sessions.check(value)).toBeUndefined();
  });

  it('cookie flags: HttpOnly, SameSite=Strict, Max-Age on both paths; Secure as configured', () => {
    const request = (proto?: string) => ({ protocol: 'http', headers: proto ? { 'x-forwarded-proto': proto } : {} }) as never;
    const auto = new Sessions([TOKEN]);
    expect(auto.cookies(request(), 'v')).toEqual(['da2a_session=v; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=28800', 'da2a_session=v; Path=/admin/queues; HttpOnly; SameSite=Strict; Max-Age=28800']);
    expect(auto.cookies(request('https'), 'v').every((cookie) => cookie.endsWith('; Secure'))).toBe(true);
    expect(new Sessions([TOKEN], { secureCookie: true }).cookies(request(), 'v').every((cookie) => cookie.endsWith('; Secure'))).toBe(true);
    expect(new Sessions([TOKEN], { secureCookie: false }).cookies(request('https'), 'v').some((cookie) => cookie.includes('Secure'))).toBe(false);
    expect(auto.cookies(request(), undefined)[0]).toBe('da2a_session=; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=0');
  });
});

describe('where a sign-in leads', () => {
  it('always a path of /ui or /admin/queues on this origin, whatever `next` says', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.webUrl(), fc.constantFrom('/ui', '/ui/workflows/a?b=c', '//evil.example/ui', '/\\evil.example', '/ui//evil', '/admin/queues/x', 'javascript:alert(1)')), (next) => {
        const where = safeNext(next);
        expect(where).toMatch(/^\/(ui|admin\/queues)([/?#]|$)/);
        expect(where).not.toContain('//');
        expect(where).not.toContain('\\');
        const url = new URL(where, 'http://service.example');
        expect(url.host).toBe('service.example');
      }),
      { numRuns: 500 },
    );
    expect(safeNext('/ui/workflows/trip-1')).toBe('/ui/workflows/trip-1');
  });
});

describe('outcome headings', () => {
  const STATES = ['RUNNING', 'COMPENSATING', 'COMPLETED', 'FAILED', 'COMPENSATED', 'CANCELED', 'NEEDS_ATTENTION'] as const;
  it('cancelled on request and undone (or with nothing to undo) is never headed as a failure', () => {
    fc.assert(
      fc.property(fc.constantFrom('COMPENSATED', 'CANCELED'), fc.nat({ max: 2 }), (state, questions) => {
        const outcome = outcomeOf({ state, cancelRequested: true, openQuestions: Array.from({ length: questions }) as never });
        expect(outcome.kind).toBe('cancelled');
        expect(`${outcome.heading} ${outcome.summary} ${outcome.reasonsLabel}`).not.toMatch(/fail/i);
      }),
    );
    expect(outcomeOf({ state: 'COMPENSATED', cancelRequested: true, openQuestions: [] }).heading).toBe('Cancelled and undone');
  });

  it('every state has a heading; a failure is headed as one; an open question says an answer is needed', () => {
    fc.assert(
      fc.property(fc.constantFrom(...STATES), fc.boolean(), fc.nat({ max: 2 }), (state, cancelRequested, questions) => {
        const outcome = outcomeOf({ state, cancelRequested, openQuestions: Array.from({ length: questions }) as never });
        expect(outcome.heading.length).toBeGreaterThan(0);
        if (state === 'COMPLETED') expect(outcome.heading).toBe('Completed');
        if (state === 'FAILED' || (state === 'COMPENSATED' && !cancelRequested)) expect(outcome.kind).toBe('failed');
        if (state === 'NEEDS_ATTENTION') expect(outcome.heading).toBe('Needs a person: a decision');
        if (state === 'RUNNING' && questions > 0) expect(outcome.heading).toBe('Needs a person: an answer');
      }),
    );
  });
});
