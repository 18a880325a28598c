/**
 * Identifiers an agent sends (task, context, message and artifact ids): strings the journal, Redis, URLs and gRPC carry
 * as UTF-8. JSON text can hold a lone UTF-16 surrogate (`"\ud800"`) that UTF-8 cannot: every such id would be written
 * as U+FFFD, so two of the agent's ids could become one (attack 32: artifacts `a\ud800` and `a\udc00` were journaled as
 * one artifact, the second dropped as a chunk after the first's seal, and the step COMPLETED with half its result) and
 * the id we keep would not be the agent's. An answer naming such an id is refused as unreadable (delivery received,
 * effect maybe): what it cannot prove is decided by a full read, the search or a person.
 */
import { z } from 'zod';

/** A lone surrogate (a code unit of a pair without its other half); a whole pair reads as one code point under `u`. */
const LONE_SURROGATE = /\p{Surrogate}/u;

/** Whether `text` is well-formed UTF-16, so UTF-8 carries it unchanged (`String.prototype.isWellFormed`). */
export const isWellFormedText = (text: string): boolean => !LONE_SURROGATE.test(text);

const WELL_FORMED = { message: 'an id must be well-formed Unicode (a lone surrogate cannot be carried as UTF-8)' } as const;

/**
 * The most UTF-8 bytes an identifier an agent sends may have: 1 KiB. Ids are UUIDs, ULIDs or resource names in practice
 * (tens of bytes). The journal keeps an id whole (a task id is read back by GetTask, a push config id by Delete) and
 * writes it into Redis rows and into every log line about its delegation, so a longer one is refused, never cut: an
 * answer naming it is unreadable (delivery received, effect maybe), as one naming a malformed id (edges35: a 200 KB
 * push config id answered by Create was journaled whole and logged with every line about the delegation).
 */
export const WIRE_ID_BYTES_MAX = 1024;

const utf8 = new TextEncoder();

/**
 * Whether `text` is at most `WIRE_ID_BYTES_MAX` UTF-8 bytes. A UTF-16 unit is at most 3 bytes, so a short text is not
 * encoded, and one of more units than the bound never fits; `TextEncoder`, not `Buffer`, so the pure entry stays pure.
 */
export const isWithinIdBytes = (text: string): boolean =>
  text.length * 3 <= WIRE_ID_BYTES_MAX || (text.length <= WIRE_ID_BYTES_MAX && utf8.encode(text).length <= WIRE_ID_BYTES_MAX);

const WITHIN_BYTES = { message: `an id must be at most ${WIRE_ID_BYTES_MAX} UTF-8 bytes` } as const;

/** Any identifier of the wire, "" included: well-formed, within `WIRE_ID_BYTES_MAX`. */
const AnyWireIdSchema = z.string().refine(isWellFormedText, WELL_FORMED).refine(isWithinIdBytes, WITHIN_BYTES);

/** A required identifier of the wire: at least one character, well-formed, within `WIRE_ID_BYTES_MAX`. */
export const WireIdSchema = AnyWireIdSchema.refine((text) => text.length > 0, { message: 'an id must not be empty' });

/** An optional identifier of the wire (agents send "" for an absent context, R16), well-formed and bounded when given. */
export const OptionalWireIdSchema = AnyWireIdSchema.optional();
