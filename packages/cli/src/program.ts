/**
 * The `durable-a2a` command line over the HTTP API. `run(argv, io)` parses
 * with commander, calls the API and returns the exit code (see EXIT_CODES);
 * it never calls process.exit, so it runs in-process in tests.
 */
import { readFileSync } from 'node:fs';
import { Command, CommanderError, Option } from 'commander';
import { ApiError, ApiUnreachableError, callApi, type ApiClientOptions } from './client.ts';
import { addAgentCommands, addReadCommands, addSteerCommands, type CommandHelpers } from './commands.ts';
import { addBulkCommands } from './bulk-commands.ts';
import { addTenantCommands } from './flow-commands.ts';
import { EXIT_CODES, EXIT_CODES_HELP } from './exit-codes.ts';
import type { WorkflowView } from './format.ts';

export { EXIT_CODES };

/** Where output goes and which environment supplies defaults. */
export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: Record<string, string | undefined>;
}

/** Default API URL when neither `--url` nor DURABLE_A2A_URL is given. */
export const DEFAULT_API_URL = 'http://127.0.0.1:8080';

interface GlobalOptions {
  url: string;
  token?: string;
  json?: boolean;
}

/** Runs one command line (`argv` without node and script). Resolves with the exit code. */
export async function run(argv: string[], io: CliIo): Promise<number> {
  const program = buildProgram(io);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return EXIT_CODES.OK;
  } catch (error) {
    return exitCodeOf(error, io, program.opts<Partial<GlobalOptions>>());
  }
}

/**
 * What to set when the API cannot be reached or refuses the token: the flag, the variable and where the value in use
 * came from, so a first run says how to fix it (one line after the error).
 */
function settingHint(error: ApiUnreachableError | ApiError, io: CliIo, options: Partial<GlobalOptions>): string | undefined {
  if (error instanceof ApiUnreachableError) {
    const source = options.url !== (io.env.DURABLE_A2A_URL ?? DEFAULT_API_URL) ? '--url' : io.env.DURABLE_A2A_URL ? 'DURABLE_A2A_URL' : 'the default';
    return `hint: is the API running there (${source})? Set DURABLE_A2A_URL or pass --url with its base URL, e.g. --url http://127.0.0.1:8080`;
  }
  if (error.status === 401) {
    return options.token ?? io.env.DURABLE_A2A_TOKEN
      ? `hint: the token (${options.token ? '--token' : 'DURABLE_A2A_TOKEN'}) is not one of the service's DA2A_API_TOKENS`
      : "hint: no token given: set DURABLE_A2A_TOKEN or pass --token with one of the service's DA2A_API_TOKENS";
  }
  if (error.status === 403) return "hint: the token is valid but its role may not do this (the service's DA2A_TENANTS, docs/tenants.md)";
  return undefined;
}

function exitCodeOf(error: unknown, io: CliIo, options: Partial<GlobalOptions>): number {
  if (error instanceof CommanderError) {
    return error.exitCode === 0 || error.code === 'commander.helpDisplayed' || error.code === 'commander.version' ? EXIT_CODES.OK : EXIT_CODES.USAGE;
  }
  const hint = error instanceof ApiUnreachableError || error instanceof ApiError ? settingHint(error, io, options) : undefined;
  if (error instanceof ApiUnreachableError) {
    io.stderr(`error: ${error.message}\n${hint}\n`);
    return EXIT_CODES.UNREACHABLE;
  }
  if (error instanceof ApiError) {
    io.stderr(`error: ${error.code}: ${error.message}\n${hint ? `${hint}\n` : ''}`);
    if (error.status === 404) return EXIT_CODES.NOT_FOUND;
    if (error.status === 409) return EXIT_CODES.CONFLICT;
    if (error.status === 401 || error.status === 403) return EXIT_CODES.UNAUTHORIZED;
    if ([400, 413, 415, 422].includes(error.status)) return EXIT_CODES.USAGE;
    return EXIT_CODES.FAILURE;
  }
  io.stderr(`error: ${error instanceof Error ? error.message : String(error)}\n`);
  return EXIT_CODES.FAILURE;
}

/** This package's version (its package.json, next to `src/` and `dist/`): what `--version` prints. */
export const CLI_VERSION: string = (() => {
  const parsed = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version?: unknown };
  return typeof parsed.version === 'string' ? parsed.version : 'unknown';
})();

function buildProgram(io: CliIo): Command {
  const program = new Command('durable-a2a')
    .description('Inspect and steer durable-a2a workflows over the HTTP API')
    .addOption(new Option('--url <url>', 'API base URL (env DURABLE_A2A_URL)').default(io.env.DURABLE_A2A_URL ?? DEFAULT_API_URL))
    .addOption(new Option('--token <token>', 'API token, one of the service\'s DA2A_API_TOKENS (env DURABLE_A2A_TOKEN)'))
    .option('--json', 'print the API answer as JSON')
    .version(CLI_VERSION, '-V, --version', 'print the version of durable-a2a')
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr })
    .showHelpAfterError()
    .addHelpText('after', `\n${EXIT_CODES_HELP}`);
  const helpers = commandHelpers(io);
  addReadCommands(program, helpers);
  addSteerCommands(program, helpers);
  addAgentCommands(program, helpers);
  addBulkCommands(program, helpers);
  addTenantCommands(program, helpers);
  return program;
}

/** The helpers over the global options. Flags win over the environment (the io's, so tests and embedders control it). */
function commandHelpers(io: CliIo): CommandHelpers {
  const globals = (command: Command): GlobalOptions => {
    const options = command.optsWithGlobals<GlobalOptions>();
    return { ...options, url: options.url ?? DEFAULT_API_URL, token: options.token ?? io.env.DURABLE_A2A_TOKEN };
  };
  const api = (command: Command): ApiClientOptions => {
    const { url, token } = globals(command);
    return { url, ...(token ? { token } : {}) };
  };
  return {
    api,
    print: (command, value, human) => io.stdout(`${globals(command).json ? JSON.stringify(value, null, 2) : human()}\n`),
    view: (command, id, waitMs, untilQuestion) =>
      callApi<WorkflowView>(api(command), 'GET', `v1/workflows/${encodeURIComponent(id)}${waitMs ? `?waitMs=${waitMs}${untilQuestion ? '&untilQuestion=true' : ''}` : ''}`),
  };
}
