/**
 * `workflows search|cancel|resolve|retry --where …`: finding workflows and acting on every workflow a filter
 * matches, over `GET /v1/workflows` and `POST /v1/bulk/workflows/{action}` (at most 500 per call; `--all` follows
 * the cursor). `--dry-run` lists what would change and changes nothing.
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import { callApi } from './client.ts';
import type { CommandHelpers } from './commands.ts';
import { EXIT_CODES } from './exit-codes.ts';

/** Most pages `--all` walks through. */
const MAX_PAGES = 200;

/** The API's filter (`WorkflowFilterSchema` in @durable-a2a/producer), as `--where` builds it. */
interface Filter {
  state?: string;
  waiting?: boolean;
  attentionCode?: string;
  agent?: string;
  idPrefix?: string;
  createdAfter?: string;
  createdBefore?: string;
  metadata?: Record<string, string>;
  /** The workflows' tenant (operators; any other token sees its own tenant's only: docs/tenants.md). */
  tenant?: string;
}

/** `--where` names: `meta.<key>=<value>` and these (`attention` is the attention code). */
const WHERE_FIELDS: Readonly<Record<string, keyof Filter>> = {
  state: 'state',
  waiting: 'waiting',
  attention: 'attentionCode',
  agent: 'agent',
  idPrefix: 'idPrefix',
  createdAfter: 'createdAfter',
  createdBefore: 'createdBefore',
  tenant: 'tenant',
};
const WHERE_HELP = 'a criterion, repeatable: meta.<key>=<value>, state=<STATE>, attention=<CODE>, agent=<url>, idPrefix=<prefix>, createdAfter=<ISO 8601>, createdBefore=<ISO 8601>, waiting=true, tenant=<tenant> (operators)';

/** Adds one `--where` criterion to `filter`. @throws InvalidArgumentError naming what is wrong */
export function addCriterion(criterion: string, filter: Filter = {}): Filter {
  const equals = criterion.indexOf('=');
  if (equals <= 0) throw new InvalidArgumentError(`'${criterion}' is not name=value (${WHERE_HELP})`);
  const name = criterion.slice(0, equals);
  const value = criterion.slice(equals + 1);
  if (name.startsWith('meta.') && name.length > 5) return { ...filter, metadata: { ...filter.metadata, [name.slice(5)]: value } };
  const field = WHERE_FIELDS[name];
  if (!field) throw new InvalidArgumentError(`unknown criterion '${name}' (${WHERE_HELP})`);
  if (field === 'waiting') {
    if (value !== 'true' && value !== 'false') throw new InvalidArgumentError(`waiting must be true or false, not '${value}'`);
    return { ...filter, waiting: value === 'true' };
  }
  return { ...filter, [field]: value };
}

/** The listing's query string of a filter (metadata as repeated `meta=key=value`). */
function queryOf(filter: Filter, limit: number, cursor?: string): URLSearchParams {
  const query = new URLSearchParams({ limit: String(limit) });
  for (const [name, value] of Object.entries(filter)) {
    if (name === 'metadata') for (const [key, text] of Object.entries(value as Record<string, string>)) query.append('meta', `${key}=${text}`);
    else query.set(name, String(value));
  }
  if (cursor) query.set('cursor', cursor);
  return query;
}

interface BulkItem {
  workflowId: string;
  state: string;
  outcome: 'done' | 'would' | 'skipped';
  code?: string;
  detail?: string;
  resultState?: string;
}

const itemLine = (item: BulkItem) => [item.workflowId, item.outcome, item.resultState ? `${item.state} -> ${item.resultState}` : item.state, item.code ? `${item.code}: ${item.detail ?? ''}` : ''].filter(Boolean).join('\t');

interface BulkOptions {
  where?: Filter;
  dryRun?: boolean;
  limit: number;
  cursor?: string;
  all?: boolean;
  resolution?: 'retry' | 'abandon';
}

const limitOf = (value: string) => {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1 || parsed > 500) throw new InvalidArgumentError('--limit must be a whole number from 1 to 500.');
  return parsed;
};

/** `workflows search`, `workflows cancel|resolve|retry`. */
export function addBulkCommands(program: Command, helpers: CommandHelpers): void {
  const workflows = program.command('workflows').description('find workflows by filter, and cancel, resolve or retry every one a filter matches');
  workflows
    .command('search')
    .description('workflow summaries matching --where (through the search index; by id with meta. or idPrefix, else newest first)')
    .option('--where <criterion>', WHERE_HELP, addCriterion)
    .option('--limit <n>', 'workflows per page (1 to 500)', limitOf, 50)
    .option('--cursor <cursor>', 'continue after the previous page')
    .option('--all', `follow the cursor (at most ${MAX_PAGES} pages)`)
    .action(async (options: BulkOptions, command: Command) => {
      const found: { workflowId: string; state: string; updatedAt: string }[] = [];
      let cursor = options.cursor;
      for (let page = 0; page < MAX_PAGES; page++) {
        const answer = await callApi<{ workflows: typeof found; cursor?: string }>(helpers.api(command), 'GET', `v1/workflows?${queryOf(options.where ?? {}, options.limit, cursor)}`);
        found.push(...answer.workflows);
        cursor = answer.cursor;
        if (!cursor || !options.all) break;
      }
      helpers.print(command, { workflows: found, ...(cursor ? { cursor } : {}) }, () => [...found.map((row) => `${row.workflowId}\t${row.state}\t${row.updatedAt}`), ...(cursor ? [`more: --cursor ${cursor}`] : [])].join('\n') || '(none)');
    });

  for (const action of ['cancel', 'resolve', 'retry'] as const) {
    const command = workflows
      .command(action)
      .description(
        action === 'cancel'
          ? 'cancel every workflow --where matches (CancelTask for running tasks, then compensation)'
          : action === 'retry'
            ? 'resolve with retry every workflow in NEEDS_ATTENTION --where matches'
            : 'resolve (--action retry|abandon) every workflow in NEEDS_ATTENTION --where matches',
      )
      .option('--where <criterion>', WHERE_HELP, addCriterion)
      .option('--dry-run', 'list what would change, change nothing')
      .option('--limit <n>', 'workflows per call (1 to 500)', limitOf, 100)
      .option('--cursor <cursor>', 'continue after the previous call')
      .option('--all', `follow the cursor (at most ${MAX_PAGES} calls)`);
    if (action === 'resolve') command.addOption(new Option('--action <action>', 'the decision').choices(['retry', 'abandon']).makeOptionMandatory());
    command.action(async (options: BulkOptions & { action?: 'retry' | 'abandon' }, self: Command) => {
      if (!options.where) self.error('error: name at least one --where criterion (a bulk action never acts on every workflow by omission)', { exitCode: EXIT_CODES.USAGE, code: 'durable-a2a.where' });
      const items: BulkItem[] = [];
      let cursor = options.cursor;
      for (let page = 0; page < MAX_PAGES; page++) {
        const body = { filter: options.where, dryRun: options.dryRun ?? false, limit: options.limit, ...(cursor ? { cursor } : {}), ...(options.action ? { resolution: options.action } : {}) };
        const answer = await callApi<{ items: BulkItem[]; cursor?: string }>(helpers.api(self), 'POST', `v1/bulk/workflows/${action}`, body);
        items.push(...answer.items);
        cursor = answer.cursor;
        if (!cursor || !options.all) break;
      }
      helpers.print(self, { action, dryRun: options.dryRun ?? false, items, ...(cursor ? { cursor } : {}) }, () =>
        [...items.map(itemLine), `${items.filter((item) => item.outcome !== 'skipped').length} ${options.dryRun ? 'would change' : 'changed'}, ${items.filter((item) => item.outcome === 'skipped').length} skipped`, ...(cursor ? [`more: --cursor ${cursor}`] : [])].join('\n'),
      );
    });
  }
}
