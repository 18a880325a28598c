/**
 * The commands of `durable-a2a`, one function per group: reading workflows (list, show, questions),
 * steering them (reply, resolve, cancel) and the agent registry (agents add, list, disable, enable, remove, limits:
 * flow-commands.ts).
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import { ApiError, callApi, type ApiClientOptions } from './client.ts';
import { EXIT_CODES } from './exit-codes.ts';
import { addAgentLimitsCommand } from './flow-commands.ts';
import { WORKFLOW_LINE_HEADER, formatAgent, formatQuestion, formatTimeline, formatWorkflowLine, type Agent, type WorkflowView } from './format.ts';

/** Most workflows `list` reads by default (`--limit`). */
const DEFAULT_LIST_LIMIT = 50;
/** Most pages `list` walks through, whatever the filter. */
const MAX_LIST_PAGES = 200;

/** What every command uses: the API address and token, output (`--json` or text), one workflow view. */
export interface CommandHelpers {
  api: (command: Command) => ApiClientOptions;
  /** Prints `value` as JSON with `--json`, else `human()`. */
  print: (command: Command, value: unknown, human: () => string) => void;
  /** GET /v1/workflows/:id, optionally as a long poll of `waitMs` that, with `untilQuestion`, also ends at an open question. */
  view: (command: Command, id: string, waitMs?: number, untilQuestion?: boolean) => Promise<WorkflowView>;
}

interface ListOptions {
  state?: string;
  waiting?: boolean;
  limit: number;
}

/** `list`, `show <id>`, `questions [id]`. */
export function addReadCommands(program: Command, helpers: CommandHelpers): void {
  program
    .command('list')
    .description('list workflows, newest (a workflow transition or a new question) first, through the search index (see also: workflows search)')
    .addOption(
      new Option('--state <state>', 'only workflows in this state, or with an open question of this kind (INPUT_REQUIRED, AUTH_REQUIRED)')
        .choices(['RUNNING', 'COMPENSATING', 'COMPLETED', 'FAILED', 'COMPENSATED', 'CANCELED', 'NEEDS_ATTENTION', 'INPUT_REQUIRED', 'AUTH_REQUIRED']),
    )
    .option('--waiting', 'only workflows waiting for a person: an open question, or NEEDS_ATTENTION')
    .option('--limit <n>', 'read at most this many workflows', (value) => positiveInteger(value, '--limit'), DEFAULT_LIST_LIMIT)
    .action(async (options: ListOptions, command: Command) => {
      const views = await listViews(helpers, command, options);
      helpers.print(command, views, () => (views.length > 0 ? [WORKFLOW_LINE_HEADER, ...views.map(formatWorkflowLine)].join('\n') : '(none)'));
    });

  program
    .command('show <id>')
    .description('timeline of a workflow: steps, attempts, questions, compensations, evidence')
    .option(
      '--wait <ms>',
      'long poll: wait up to this long (capped at 30000) for the workflow to finish (COMPLETED, COMPENSATED, FAILED, CANCELED) or reach NEEDS_ATTENTION; an open question does not end the wait unless --until-question',
      (value) => positiveInteger(value, '--wait'),
    )
    .option('--until-question', 'with --wait: also stop as soon as a step asks a question (INPUT_REQUIRED or AUTH_REQUIRED), the other thing a person waits on')
    .action(async (id: string, options: { wait?: number; untilQuestion?: boolean }, command: Command) => {
      if (options.untilQuestion && !options.wait) command.error('error: --until-question needs --wait <ms>', { exitCode: EXIT_CODES.USAGE, code: 'durable-a2a.until-question' });
      const found = await helpers.view(command, id, options.wait, options.untilQuestion);
      helpers.print(command, found, () => formatTimeline(found));
    });

  program
    .command('questions [id]')
    .description('open questions of one workflow, or of every running workflow')
    .action(async (id: string | undefined, _options: unknown, command: Command) => {
      const views = id ? [await helpers.view(command, id)] : await listViews(helpers, command, { state: 'RUNNING', waiting: true, limit: DEFAULT_LIST_LIMIT });
      const questions = views.flatMap((found) => found.openQuestions.map((question) => ({ workflowId: found.workflowId, ...question })));
      helpers.print(command, questions, () => questions.map((question) => formatQuestion(question.workflowId, question)).join('\n') || '(no open question)');
    });
}

/** `reply <id> <step> <text>`, `resolve <id> <action>`, `cancel <id>`. */
export function addSteerCommands(program: Command, helpers: CommandHelpers): void {
  program
    .command('reply <id> <step> <text>')
    .description("answer a step's open question (same task, same context)")
    .action(async (id: string, step: string, text: string, _options: unknown, command: Command) => {
      const result = await callApi<{ messageId: string; created: boolean }>(helpers.api(command), 'POST', `v1/workflows/${encodeURIComponent(id)}/steps/${encodeURIComponent(step)}/reply`, { text });
      helpers.print(command, result, () => `${result.created ? 'reply journaled' : 'already answered with this reply'}: message ${result.messageId}`);
    });

  program
    .command('resolve <id> <action>')
    .description('decide on a workflow in NEEDS_ATTENTION: retry (send the ambiguous attempts, or the failed compensation, again), or abandon (undo what can be undone, else FAILED)')
    .action(async (id: string, action: string, _options: unknown, command: Command) => {
      if (action !== 'retry' && action !== 'abandon') program.error(`error: action must be retry or abandon, not '${action}'`, { exitCode: EXIT_CODES.USAGE, code: 'durable-a2a.action' });
      const result = await callApi<{ state: string }>(helpers.api(command), 'POST', `v1/workflows/${encodeURIComponent(id)}/resolve`, { action });
      helpers.print(command, result, () => `${id}: ${action} accepted, ${result.state}`);
    });

  program
    .command('cancel <id>')
    .description('cancel a workflow: CancelTask for running tasks, then compensation')
    .action(async (id: string, _options: unknown, command: Command) => {
      const result = await callApi<unknown>(helpers.api(command), 'POST', `v1/workflows/${encodeURIComponent(id)}/cancel`);
      helpers.print(command, result, () => `${id}: cancel requested`);
    });
}

/**
 * `agents add <cardUrl>`, `agents list` (also `agents` alone), `agents disable <agent> [--reason]`, `agents enable
 * <agent>`, `agents remove <agent>`, `agents limits <agent>`: `<agent>` is the id `agents list` shows or a card URL in any
 * spelling.
 */
export function addAgentCommands(program: Command, helpers: CommandHelpers): void {
  const agents = program.command('agents').description('registered agents: list (the default), add <cardUrl>, disable|enable|remove|limits <agent>');
  const agentPath = (agent: string) => `v1/agents/${encodeURIComponent(agent)}`;
  agents
    .command('add <cardUrl>')
    .description('register (or refresh) an agent by its Agent Card URL or base URL; another spelling of a registered URL refreshes that agent')
    .action(async (cardUrl: string, _options: unknown, command: Command) => {
      const agent = await callApi<Agent>(helpers.api(command), 'POST', 'v1/agents', { cardUrl });
      helpers.print(command, agent, () => formatAgent(agent));
    });
  agents
    .command('list', { isDefault: true })
    .description('list registered agents with status, health and last card fetch (the default)')
    .action(async (_options: unknown, command: Command) => {
      const { agents: list } = await callApi<{ agents: Agent[] }>(helpers.api(command), 'GET', 'v1/agents');
      helpers.print(command, list, () => list.map(formatAgent).join('\n') || '(none)');
    });
  agents
    .command('disable <agent>')
    .description('disable an agent (id or card URL): never picked for a skill; delegations bound to it go on')
    .option('--reason <text>', 'why, shown with the agent')
    .action(async (agent: string, options: { reason?: string }, command: Command) => {
      const view = await callApi<Agent>(helpers.api(command), 'POST', `${agentPath(agent)}/disable`, options.reason ? { reason: options.reason } : {});
      helpers.print(command, view, () => formatAgent(view));
    });
  agents
    .command('enable <agent>')
    .description('enable a disabled agent (id or card URL)')
    .action(async (agent: string, _options: unknown, command: Command) => {
      const view = await callApi<Agent>(helpers.api(command), 'POST', `${agentPath(agent)}/enable`);
      helpers.print(command, view, () => formatAgent(view));
    });
  agents
    .command('remove <agent>')
    .description('remove an agent (id or card URL); delegations bound to it go on')
    .action(async (agent: string, _options: unknown, command: Command) => {
      const removed = await callApi<{ id: string; cardUrl: string }>(helpers.api(command), 'DELETE', agentPath(agent));
      helpers.print(command, removed, () => `${removed.id}\t${removed.cardUrl}\tremoved`);
    });
  addAgentLimitsCommand(agents, helpers, agentPath);
}

/** Pages through /v1/workflows (bounded by `limit` workflows and MAX_LIST_PAGES pages), reading each view. */
async function listViews(helpers: CommandHelpers, command: Command, options: ListOptions): Promise<WorkflowView[]> {
  const views: WorkflowView[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_LIST_PAGES && views.length < options.limit; page++) {
    const query = new URLSearchParams({ limit: String(Math.min(options.limit, 500)) });
    if (options.state) query.set('state', options.state);
    if (cursor) query.set('cursor', cursor);
    const answer = await callApi<{ ids: string[]; cursor?: string }>(helpers.api(command), 'GET', `v1/workflows?${query}`);
    for (const id of answer.ids) {
      if (views.length >= options.limit) break;
      const found = await helpers.view(command, id).catch((error: unknown) => (error instanceof ApiError && error.status === 404 ? undefined : Promise.reject(error)));
      if (found && (!options.waiting || found.openQuestions.length > 0 || found.state === 'NEEDS_ATTENTION')) views.push(found);
    }
    cursor = answer.cursor;
    if (!cursor) break;
  }
  return views;
}

function positiveInteger(value: string, name: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1) throw new InvalidArgumentError(`${name} must be a positive integer.`);
  return parsed;
}
