/**
 * Instants as views show them: ISO 8601, UTC, exactly `new Date(ms).toISOString()`. A view shows 5 to 10 of them
 * (its own, each attempt's, each history entry's), most on the same day, and `toISOString` makes a `Date` and formats
 * every field each time. Here the day's text (`2026-12-07T`) comes from `toISOString` once per day and only the time
 * of day is formatted, from tables of two- and three-digit texts.
 */

const MS_PER_DAY = 86_400_000;
/** The Date range: ±100,000,000 days from the epoch (ECMAScript TimeClip). */
const MAX_TIME_MS = 8.64e15;
const digits = (count: number, width: number): readonly string[] => Array.from({ length: count }, (_, value) => String(value).padStart(width, '0'));
const TWO_DIGITS = digits(100, 2);
const THREE_DIGITS = digits(1_000, 3);
/** The day of the last instant formatted (days since the epoch) and its text up to the `T`, as `toISOString` gives it. */
let lastDay = Number.NaN;
let lastDayText = '';

/**
 * `new Date(ms).toISOString()`, the same text for every `ms` (`test/instant.test.ts`): an integer within the Date
 * range is formatted here, anything else (a fraction, NaN, out of range) by `toISOString`, which throws its
 * RangeError for an invalid time as before.
 */
export function instantOf(ms: number): string {
  if (!Number.isSafeInteger(ms) || ms > MAX_TIME_MS || ms < -MAX_TIME_MS) return new Date(ms).toISOString();
  const day = Math.floor(ms / MS_PER_DAY);
  if (day !== lastDay) {
    const text = new Date(day * MS_PER_DAY).toISOString();
    lastDayText = text.slice(0, text.length - 'hh:mm:ss.sssZ'.length);
    lastDay = day;
  }
  let rest = ms - day * MS_PER_DAY;
  const milliseconds = rest % 1_000;
  rest = (rest - milliseconds) / 1_000;
  const seconds = rest % 60;
  rest = (rest - seconds) / 60;
  const minutes = rest % 60;
  const hours = (rest - minutes) / 60;
  return `${lastDayText}${TWO_DIGITS[hours]}:${TWO_DIGITS[minutes]}:${TWO_DIGITS[seconds]}.${THREE_DIGITS[milliseconds]}Z`;
}
