/**
 * RT9: IP classification by ipaddr.js's special-purpose range tables. Every
 * IPv6 form that carries an IPv4 address is classified by that address, and
 * nothing outside global unicast space is ever public. Unit test: no network.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { classifyAddress } from '@durable-a2a/a2a';

describe('RT9 field inputs', () => {
  it.each([
    ['::127.0.0.1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:0:127.0.0.1', 'reserved'],
    ['64:ff9b:1::a00:1', 'private'],
    ['64:ff9b::10.0.0.1', 'private'],
    ['64:ff9b::169.254.169.254', 'metadata'],
    ['::7f00:1', 'reserved'],
    ['2002:7f00:1::', 'reserved'],
    ['fd00:ec2::254', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['100.64.0.1', 'private'],
    ['198.18.0.1', 'reserved'],
    ['2001:db8::1', 'reserved'],
    ['fe80::1%eth0', 'link-local'],
    ['8.8.8.8', 'public'],
    ['64:ff9b::8.8.8.8', 'public'],
    ['2606:4700::1111', 'public'],
  ])('%s is %s', (address, category) => {
    expect(classifyAddress(address)).toBe(category);
  });
});

const ipv4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((octets) => octets.join('.'));
const hex = (a: number, b: number) => ((a << 8) | b).toString(16);
/** The IPv6 forms that carry an IPv4 address: compatible, mapped, SIIT-translated, NAT64 (well-known and local-use), hex spelled. */
const embeddings = (v4: string): string[] => {
  const [a, b, c, d] = v4.split('.').map(Number) as [number, number, number, number];
  return [`::${v4}`, `::ffff:${v4}`, `::ffff:0:${v4}`, `64:ff9b::${v4}`, `64:ff9b:1::${v4}`, `::ffff:${hex(a, b)}:${hex(c, d)}`, `64:ff9b::${hex(a, b)}:${hex(c, d)}`];
};

describe('properties', () => {
  it('an IPv4 address that is not public is not public in any IPv6 form', () => {
    fc.assert(
      fc.property(ipv4, (v4) => {
        fc.pre(classifyAddress(v4) !== 'public');
        for (const form of embeddings(v4)) expect(classifyAddress(form), form).not.toBe('public');
      }),
      { numRuns: 2_000 },
    );
  });

  it('special IPv4 ranges are never public, in any IPv6 form', () => {
    const special = fc.oneof(
      fc.tuple(fc.constant(127), fc.nat(255), fc.nat(255), fc.nat(255)),
      fc.tuple(fc.constant(10), fc.nat(255), fc.nat(255), fc.nat(255)),
      fc.tuple(fc.constant(192), fc.constant(168), fc.nat(255), fc.nat(255)),
      fc.tuple(fc.constant(172), fc.integer({ min: 16, max: 31 }), fc.nat(255), fc.nat(255)),
      fc.tuple(fc.constant(169), fc.constant(254), fc.nat(255), fc.nat(255)),
      fc.tuple(fc.constant(0), fc.nat(255), fc.nat(255), fc.nat(255)),
      fc.tuple(fc.integer({ min: 224, max: 255 }), fc.nat(255), fc.nat(255), fc.nat(255)),
    ).map((octets) => octets.join('.'));
    fc.assert(
      fc.property(special, (v4) => {
        for (const form of [v4, ...embeddings(v4)]) expect(classifyAddress(form), form).not.toBe('public');
      }),
      { numRuns: 2_000 },
    );
  });

  it('an IPv6 address outside 2000::/3 is never public, except a NAT64 of a public IPv4', () => {
    const hextet = fc.nat(0xffff).map((value) => value.toString(16));
    const outside = fc.tuple(fc.nat(0xffff).filter((first) => first < 0x2000 || first >= 0x4000), fc.array(hextet, { minLength: 7, maxLength: 7 })).map(([first, rest]) => [first.toString(16), ...rest].join(':'));
    fc.assert(
      fc.property(outside, (address) => {
        const category = classifyAddress(address);
        if (category === 'public') expect(address.startsWith('64:ff9b:0:0:0:0:'), address).toBe(true);
      }),
      { numRuns: 5_000 },
    );
  });
});
