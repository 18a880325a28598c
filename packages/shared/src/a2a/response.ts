/**
 * Response validation shared by the bindings: every body an agent sends is
 * checked for its content type, parsed as JSON and validated with zod before use
 * (style rule 8; spec §5.7: unknown fields are ignored, required ones enforced).
 */
import type { z } from 'zod';
import { InvalidAgentResponseError, ProtocolError } from './errors.ts';
import { excerpt, isJsonMediaType } from './error-mapping.ts';

/** Parses JSON text; a body that is not JSON is a `ProtocolError` carrying an excerpt. */
export function parseJsonText(text: string, what: string, httpStatus?: number): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new ProtocolError(`${what} is not JSON`, { httpStatus, cause: text, bodyExcerpt: excerpt(text) });
  }
}

/** Requires a JSON media type (`application/json` or `application/*+json`); else `ProtocolError` (e.g. a proxy's HTML page). */
export function requireJsonContentType(contentType: string | undefined, bodyText: string, httpStatus: number, what: string): void {
  if (!isJsonMediaType(contentType)) {
    throw new ProtocolError(`${what}: expected JSON, got ${contentType ?? 'no content type'}`, {
      httpStatus,
      cause: bodyText,
      bodyExcerpt: excerpt(bodyText),
    });
  }
}

/** Validates `value` against `schema`; a mismatch is an `InvalidAgentResponseError` naming the first issues. */
export function validateWith<Schema extends z.ZodType>(schema: Schema, value: unknown, rawBody: string, what: string): z.output<Schema> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues
    .slice(0, 3)
    .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
    .join('; ');
  throw new InvalidAgentResponseError(`${what} does not match the A2A 1.0 schema: ${issues}`, {
    cause: rawBody,
    bodyExcerpt: excerpt(rawBody),
  });
}
