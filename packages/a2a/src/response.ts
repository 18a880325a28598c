/**
 * Response validation shared by the bindings: every body an agent sends is
 * checked for its content type, parsed as JSON and validated with zod before use
 * (style rule 8; spec §5.7: unknown fields are ignored, required ones enforced).
 */
import type { z } from 'zod';
import { InvalidAgentResponseError, ProtocolError, UnknownWireValueError } from './errors.ts';
import { excerpt, isJsonMediaType, tryParseJson } from './error-mapping.ts';
import { UNKNOWN_WIRE_VALUE } from './spelling.ts';

/** Leading record separators (0x1E, RFC 7464 framing leaking into SSE: V4) and whitespace. */
const LEADING_RECORD_SEPARATORS = /^[\s\u001e]+/;

/**
 * Parses JSON text; leading 0x1E record separators and whitespace are tolerated (V4). A body that is
 * not JSON is a `ProtocolError` carrying an excerpt.
 */
export function parseJsonText(text: string, what: string, httpStatus?: number): unknown {
  try {
    return JSON.parse(text.replace(LEADING_RECORD_SEPARATORS, '')) as unknown;
  } catch (error) {
    throw new ProtocolError(`${what} is not JSON`, { httpStatus, cause: text, bodyExcerpt: excerpt(text) });
  }
}

/**
 * The JSON value of a 2xx body, whatever its media-type label. `application/json` or `application/*+json` is what the
 * bindings name (spec §9.1, §11.1), but a label is weak evidence and the bytes decide (the A33 kind): an agent whose
 * framework labels its JSON `text/html` (Express `res.send(text)`), `text/plain` or `application/octet-stream` answered
 * all the same, and reading its answer as unreadable sent every delegation to it, the happy path included, to a person
 * (attack 30). A body that is not JSON is a `ProtocolError`: under a JSON label "is not JSON" (`parseJsonText`), under
 * another label one naming that label (e.g. a proxy's HTML page). The caller has already checked the body's depth.
 */
export function jsonBodyOf(contentType: string | undefined, bodyText: string, httpStatus: number, what: string): unknown {
  if (isJsonMediaType(contentType)) return parseJsonText(bodyText, what, httpStatus);
  const value = tryParseJson(bodyText.replace(LEADING_RECORD_SEPARATORS, ''));
  if (value !== undefined) return value;
  throw new ProtocolError(`${what}: expected JSON, got ${contentType ?? 'no content type'}`, {
    httpStatus,
    cause: bodyText,
    bodyExcerpt: excerpt(bodyText),
  });
}

type Issue = z.core.$ZodIssue;

/** The first issue raised for a value no spelling explains (`spelling.ts`), searching inside union branches. */
function unknownValueIssue(issues: readonly Issue[]): Issue | undefined {
  const pending: Issue[] = [...issues];
  for (let index = 0; index < pending.length && index < 10_000; index++) {
    const issue = pending[index]!;
    if (issue.code === 'custom' && (issue.params as Record<string, unknown> | undefined)?.[UNKNOWN_WIRE_VALUE]) return issue;
    if (issue.code === 'invalid_union') for (const branch of issue.errors) pending.push(...branch);
  }
  return undefined;
}

/**
 * Validates `value` against `schema`. A value no known spelling explains is an `UnknownWireValueError`
 * (R26: permanent for the attempt); any other mismatch an `InvalidAgentResponseError` naming the first issues.
 */
export function validateWith<Schema extends z.ZodType>(schema: Schema, value: unknown, rawBody: string, what: string): z.output<Schema> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const unknown = unknownValueIssue(parsed.error.issues);
  if (unknown) {
    const field = unknown.path.join('.');
    throw new UnknownWireValueError(`${what}: ${unknown.message} at ${field || '(root)'}`, { cause: rawBody, bodyExcerpt: excerpt(rawBody), field });
  }
  const issues = parsed.error.issues
    .slice(0, 3)
    .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
    .join('; ');
  throw new InvalidAgentResponseError(`${what} does not match the A2A 1.0 schema: ${issues}`, {
    cause: rawBody,
    bodyExcerpt: excerpt(rawBody),
  });
}

/**
 * An answer in a non-2xx status adopted as the answer (HTTP+JSON; docs/a2a-edge.md "Ownership"): a server or proxy
 * may report its own trouble in the status after the work was done, as a JSON-RPC one may around our envelope
 * (`jsonrpc.ts`). The body is `{ result }` when it is JSON, not an error body (`isErrorBody`), valid for `schema`, and
 * its content proves it answers our request (`proof`, `answerContentProof`); `undefined` otherwise (no proof for
 * this request, not JSON, an error body, invalid, not proven ours), and the status decides as for any other body.
 * In a non-2xx `httpStatus`, the answer must also carry its own verdict: a Task or a task event does (its state), a
 * Message (`{message}`, a direct reply) does not: there the status is the only verdict ("invalid request" in a 400
 * is a refusal, not a reply), so it is never adopted. A whole JSON answer to a stream request in a 2xx is the answer
 * by its framing, as a 2xx to a plain request is (no content proof: an agent's Message without a context, or a Task
 * in a context of its own, is as much the answer on the stream route as on the plain one); the workers still judge
 * its ownership (`eventOwnership`, `taskOwnership`).
 */
export function provenAnswerIn<Schema extends z.ZodType>(
  bodyText: string,
  contentType: string | undefined,
  httpStatus: number,
  schema: Schema,
  proof: ((result: unknown) => boolean) | undefined,
  isErrorBody: (value: unknown) => boolean,
): { result: z.output<Schema> } | undefined {
  if (proof === undefined || !isJsonMediaType(contentType)) return undefined;
  const value = tryParseJson(bodyText);
  if (value === undefined || isErrorBody(value)) return undefined;
  const parsed = schema.safeParse(value);
  if (!parsed.success) return undefined;
  // A 2xx is the answer to our request by its framing, as `readRestAnswer` reads one (the workers judge its content).
  if (httpStatus >= 200 && httpStatus < 300) return { result: parsed.data };
  const verdictless = typeof parsed.data === 'object' && parsed.data !== null && 'message' in parsed.data;
  return verdictless || !proof(parsed.data) ? undefined : { result: parsed.data };
}

/** A body with an `error` member: an error body (google.rpc.Status, spec §11.6, or any other), never an answer. */
export const hasErrorMember = (value: unknown): boolean => typeof value === 'object' && value !== null && 'error' in value;
