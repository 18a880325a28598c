/**
 * Reading an agent's clock. Agents' clocks are observations, never authorities:
 * a timestamp only orders two observations of the same rank (see applyStatus-5.lua).
 * Older agents write zone-less local times; we read every zone-less ISO 8601
 * date-time as UTC, wherever we parse one (docs/agents.md "Clocks, ownership, artifacts and what each answer proves").
 */

/** ISO 8601 date-time with an explicit zone (`Z`, `+hh:mm`, `+hhmm`, `+hh`). */
const HAS_ZONE = /(?:[zZ]|[+-]\d{2}(?::?\d{2})?)$/;
/** A date-time (date, `T` or space, time) without a zone. */
const DATE_TIME = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}/;

/**
 * Parses an agent's status timestamp to epoch ms; zone-less date-times are read as UTC.
 * @returns NaN when missing or unreadable (the observation is then unordered, never refused).
 */
export function parseAgentTimestamp(text: string | undefined): number {
  if (!text) return Number.NaN;
  const trimmed = text.trim();
  if (DATE_TIME.test(trimmed) && !HAS_ZONE.test(trimmed)) return Date.parse(`${trimmed.replace(' ', 'T')}Z`);
  return Date.parse(trimmed);
}
