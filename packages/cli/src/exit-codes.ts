/** Exit codes of `durable-a2a` (also in docs/people.md "The CLI"). */
export const EXIT_CODES = {
  /** The command did what was asked. */
  OK: 0,
  /** Anything else: the API failed (5xx) or answered something unexpected. */
  FAILURE: 1,
  /** Bad usage: unknown command or option, missing argument, or the API refused the input (400, 413, 415, 422). */
  USAGE: 2,
  /** The workflow (or step) does not exist (404). */
  NOT_FOUND: 3,
  /** Refused in the current state (409): no open question, workflow already finished, not waiting for a person. */
  CONFLICT: 4,
  /** No token, or the token is not accepted (401, 403). */
  UNAUTHORIZED: 5,
  /** The API cannot be reached (connection refused, DNS, timeout). */
  UNREACHABLE: 6,
} as const;

/** The exit codes as `durable-a2a --help` prints them after the commands (same wording as docs/people.md). */
export const EXIT_CODES_HELP = [
  'Exit codes:',
  `  ${EXIT_CODES.OK}  done`,
  `  ${EXIT_CODES.FAILURE}  other failure (the API failed)`,
  `  ${EXIT_CODES.USAGE}  bad usage, or input refused (400, 413, 415, 422)`,
  `  ${EXIT_CODES.NOT_FOUND}  not found (404)`,
  `  ${EXIT_CODES.CONFLICT}  refused in the current state (409: no open question, workflow finished, not waiting for a person)`,
  `  ${EXIT_CODES.UNAUTHORIZED}  no or wrong token (401, 403)`,
  `  ${EXIT_CODES.UNREACHABLE}  the API cannot be reached`,
].join('\n');
