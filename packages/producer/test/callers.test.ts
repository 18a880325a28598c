import { describe, expect, it } from 'vitest';
import { fingerprintName, parseApiTokens, tokenNameOf } from '../src/server/callers.ts';

describe('API token names (callers.ts)', () => {
  it('name:token entries are named; a bare token by its fingerprint; only the name identifies the caller', () => {
    const tokens = parseApiTokens(['ops-alice:alice-secret', 'bare-token-with:colon/and=', '', 'dGVzdA==']);
    // An entry with ':' after a name-like start is name:token (docs/people.md "History": bare tokens hold no ':').
    expect(tokens.map((token) => token.name)).toEqual(['ops-alice', 'bare-token-with', fingerprintName('dGVzdA==')]);
    expect(tokenNameOf('alice-secret', tokens)).toBe('ops-alice');
    expect(tokenNameOf('ops-alice:alice-secret', tokens)).toBeUndefined();
    expect(tokenNameOf('dGVzdA==', tokens)).toMatch(/^token-[0-9a-f]{8}$/);
    expect(tokenNameOf(undefined, tokens)).toBeUndefined();
  });

  it('two tokens with one name are refused (the history could not say which acted)', () => {
    expect(() => parseApiTokens(['ci:a', 'ci:b'])).toThrow(/share a name/);
  });
});
