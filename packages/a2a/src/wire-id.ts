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

/** A required identifier of the wire: at least one character, well-formed. */
export const WireIdSchema = z.string().min(1).refine(isWellFormedText, WELL_FORMED);

/** An optional identifier of the wire (agents send "" for an absent context, R16), well-formed when given. */
export const OptionalWireIdSchema = z.string().refine(isWellFormedText, WELL_FORMED).optional();
