/**
 * Start-up configuration helper shared by the executables: parse the
 * environment once with a zod-backed parser, and on bad input print one
 * readable line per bad variable and exit with code 2 (no stack trace).
 */

/** Runs `parse(environment)`; on failure prints `configuration error: NAME: message` lines and exits 2. */
export function parseEnvironmentOrExit<T>(parse: (environment: NodeJS.ProcessEnv) => T, environment: NodeJS.ProcessEnv = process.env): T {
  try {
    return parse(environment);
  } catch (error) {
    const issues = (error as { issues?: { path: PropertyKey[]; message: string }[] }).issues ?? [];
    for (const issue of issues) console.error(`configuration error: ${issue.path.join('.') || '(environment)'}: ${issue.message}`);
    if (issues.length === 0) console.error(`configuration error: ${String(error)}`);
    process.exit(2);
  }
}
