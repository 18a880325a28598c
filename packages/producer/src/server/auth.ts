/**
 * Credentials checks. Every comparison is constant-time over equal-length
 * buffers: secrets are hashed to SHA-256 first, so their lengths never leak
 * and `timingSafeEqual` never throws on a length mismatch.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();

/** Constant-time equality of two secrets (of any lengths). */
export function secretEquals(given: string, expected: string): boolean {
  return timingSafeEqual(digest(given), digest(expected));
}

/** True if `given` equals one of `expected`; compares against all of them, whatever matches. */
export function oneOf(given: string | undefined, expected: readonly string[]): boolean {
  if (given === undefined) return false;
  let match = false;
  for (const candidate of expected) match = secretEquals(given, candidate) || match;
  return match;
}

/** The credentials of `Authorization: Bearer <token>`, or undefined. */
export function bearerOf(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  return match?.[1];
}

/** The value of one cookie from the Cookie header, or undefined. */
export function cookieOf(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  for (const pair of header.split(';')) {
    const separator = pair.indexOf('=');
    if (separator > 0 && pair.slice(0, separator).trim() === name) return pair.slice(separator + 1).trim();
  }
  return undefined;
}
