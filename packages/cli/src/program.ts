/**
 * The `durable-a2a` command line over the HTTP API. `run(argv, io)` parses
 * with commander, calls the API and returns the exit code (see EXIT_CODES);
 * it never calls process.exit, so it runs in-process in tests.
 */
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { ApiError, ApiUnreachableError, callApi, type ApiClientOptions } from './client.ts';
import { formatAgent, formatQuestion, formatTimeline, formatWorkflowLine, type Agent, type WorkflowView } from './format.ts';

/** Exit codes of `durable-a2a` (also in the README). */
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

/** Where output goes and which environment supplies defaults. */
export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: Record<string, string | undefined>;
}

/** Default API URL when neither `--url` nor DURABLE_A2A_URL is given. */
export const DEFAULT_API_URL = 'http://127.0.0.1:8080';
/** Most workflows `list` reads by default (`--limit`). */
const DEFAULT_LIST_LIMIT = 50;
/** Most pages `list` walks through, whatever the filter. */
const MAX_LIST_PAGES = 200;

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
    return exitCodeOf(error, io);
  }
}

function exitCodeOf(error: unknown, io: CliIo): number {
  if (error instanceof CommanderError) {
    return error.exitCode === 0 || error.code === 'commander.helpDisplayed' || error.code === 'commander.version' ? EXIT_CODES.OK : EXIT_CODES.USAGE;
  }
  if (error instanceof ApiUnreachableError) {
    io.stderr(`error: ${error.message}\n`);
    return EXIT_CODES.UNREACHABLE;
  }
  if (error instanceof ApiError) {
    io.stderr(`error: ${error.code}: ${error.message}\n`);
    if (error.status === 404) return EXIT_CODES.NOT_FOUND;
    if (error.status === 409) return EXIT_CODES.CONFLICT;
    if (error.status === 401 || error.status === 403) return EXIT_CODES.UNAUTHORIZED;
    if ([400, 413, 415, 422].includes(error.status)) return EXIT_CODES.USAGE;
    return EXIT_CODES.FAILURE;
  }
  io.stderr(`error: ${error instanceof Error ? error.message : String(error)}\n`);
  return EXIT_CODES.FAILURE;
}

function buildProgram(io: CliIo): Command {
  const program = new Command('durable-a2a')
    .description('Inspect and steer durable-a2a workflows over the HTTP API')
    .addOption(new Option('--url <url>', 'API base URL (env DURABLE_A2A_URL)').default(io.env.DURABLE_A2A_URL ?? DEFAULT_API_URL))
    .addOption(new Option('--token <token>', 'API token, one of the service\'s DA2A_API_TOKENS (env DURABLE_A2A_TOKEN)'))
    .option('--json', 'print the API answer as JSON')
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr })
    .showHelpAfterError();
  // Flags win over the environment (the io's, so tests and embedders control it).
  const globals = (command: Command): GlobalOptions => {
    const options = command.optsWithGlobals<GlobalOptions>();
    return { ...options, url: options.url ?? DEFAULT_API_URL, token: options.token ?? io.env.DURABLE_A2A_TOKEN };
  };
  const api = (command: Command): ApiClientOptions => {
    const { url, token } = globals(command);
    return { url, ...(token ? { token } : {}) };
  };
  const print = (command: Command, value: unknown, human: () => string) => io.stdout(`${globals(command).json ? JSON.stringify(value, null, 2) : human()}\n`);
  const view = (command: Command, id: string, waitMs?: number) =>
    callApi<WorkflowView>(api(command), 'GET', `v1/workflows/${encodeURIComponent(id)}${waitMs ? `?waitMs=${waitMs}` : ''}`);

  program
    .command('list')
    .description('list workflows (newest state first is not guaranteed: Redis set order)')
    .addOption(new Option('--state <state>', 'only workflows in this state').choices(['RUNNING', 'COMPENSATING', 'COMPLETED', 'FAILED', 'COMPENSATED', 'CANCELED', 'NEEDS_ATTENTION']))
    .option('--waiting', 'only workflows waiting for a person: an open question, or NEEDS_ATTENTION')
    .option('--limit <n>', 'read at most this many workflows', (value) => positiveInteger(value, '--limit'), DEFAULT_LIST_LIMIT)
    .action(async (options: { state?: string; waiting?: boolean; limit: number }, command: Command) => {
      const views = await listViews(command, options);
      print(command, views, () => views.map(formatWorkflowLine).join('\n') || '(none)');
    });

  program
    .command('show <id>')
    .description('timeline of a workflow: steps, attempts, questions, compensations, evidence')
    .option('--wait <ms>', 'long poll: wait up to this long (capped at 30000) for the workflow to finish or need a person', (value) => positiveInteger(value, '--wait'))
    .action(async (id: string, options: { wait?: number }, command: Command) => {
      const found = await view(command, id, options.wait);
      print(command, found, () => formatTimeline(found));
    });

  program
    .command('questions [id]')
    .description('open questions of one workflow, or of every running workflow')
    .action(async (id: string | undefined, _options: unknown, command: Command) => {
      const views = id ? [await view(command, id)] : await listViews(command, { state: 'RUNNING', waiting: true, limit: DEFAULT_LIST_LIMIT });
      const questions = views.flatMap((found) => found.openQuestions.map((question) => ({ workflowId: found.workflowId, ...question })));
      print(command, questions, () => questions.map((question) => formatQuestion(question.workflowId, question)).join('\n') || '(no open question)');
    });

  program
    .command('reply <id> <step> <text>')
    .description("answer a step's open question (same task, same context)")
    .action(async (id: string, step: string, text: string, _options: unknown, command: Command) => {
      const result = await callApi<{ messageId: string; created: boolean }>(api(command), 'POST', `v1/workflows/${encodeURIComponent(id)}/steps/${encodeURIComponent(step)}/reply`, { text });
      print(command, result, () => `${result.created ? 'reply journaled' : 'already answered'}: message ${result.messageId}`);
    });

  program
    .command('resolve <id> <action>')
    .description('decide on a workflow in NEEDS_ATTENTION: retry the ambiguous attempts, or abandon (compensate)')
    .action(async (id: string, action: string, _options: unknown, command: Command) => {
      if (action !== 'retry' && action !== 'abandon') program.error(`error: action must be retry or abandon, not '${action}'`, { exitCode: EXIT_CODES.USAGE, code: 'durable-a2a.action' });
      const result = await callApi<{ state: string }>(api(command), 'POST', `v1/workflows/${encodeURIComponent(id)}/resolve`, { action });
      print(command, result, () => `${id}: ${action} accepted, ${result.state}`);
    });

  program
    .command('cancel <id>')
    .description('cancel a workflow: CancelTask for running tasks, then compensation')
    .action(async (id: string, _options: unknown, command: Command) => {
      const result = await callApi<unknown>(api(command), 'POST', `v1/workflows/${encodeURIComponent(id)}/cancel`);
      print(command, result, () => `${id}: cancel requested`);
    });

  const agents = program.command('agents').description('registered agents');
  agents
    .command('add <cardUrl>')
    .description('register (or refresh) an agent by its Agent Card URL')
    .action(async (cardUrl: string, _options: unknown, command: Command) => {
      const agent = await callApi<Agent>(api(command), 'POST', 'v1/agents', { cardUrl });
      print(command, agent, () => formatAgent(agent));
    });
  agents
    .command('list')
    .description('list registered agents')
    .action(async (_options: unknown, command: Command) => {
      const { agents: list } = await callApi<{ agents: Agent[] }>(api(command), 'GET', 'v1/agents');
      print(command, list, () => list.map(formatAgent).join('\n') || '(none)');
    });
  return program;

  /** Pages through /v1/workflows (bounded by `limit` workflows and MAX_LIST_PAGES pages), reading each view. */
  async function listViews(command: Command, options: { state?: string; waiting?: boolean; limit: number }): Promise<WorkflowView[]> {
    const views: WorkflowView[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_LIST_PAGES && views.length < options.limit; page++) {
      const query = new URLSearchParams({ limit: String(Math.min(options.limit, 500)) });
      if (options.state) query.set('state', options.state);
      if (cursor) query.set('cursor', cursor);
      const answer = await callApi<{ ids: string[]; cursor?: string }>(api(command), 'GET', `v1/workflows?${query}`);
      for (const id of answer.ids) {
        if (views.length >= options.limit) break;
        const found = await view(command, id).catch((error: unknown) => (error instanceof ApiError && error.status === 404 ? undefined : Promise.reject(error)));
        if (found && (!options.waiting || found.openQuestions.length > 0 || found.state === 'NEEDS_ATTENTION')) views.push(found);
      }
      cursor = answer.cursor;
      if (!cursor) break;
    }
    return views;
  }
}

function positiveInteger(value: string, name: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1) throw new InvalidArgumentError(`${name} must be a positive integer.`);
  return parsed;
}
