/**
 * What a service imports to start and inspect work. Every call validates its
 * input with zod before anything is written, and writes the journal before it
 * enqueues: a crash in between leaves a journaled intent that the reconciler
 * finds and sends.
 *
 * The calls live in `calls/`: create.ts (delegate, startWorkflow), reply.ts,
 * cancel.ts (cancel, resolve), read.ts (listWorkflows, registerAgent), over
 * context.ts (connections, input parsing, the view).
 */
import { z } from 'zod';
import { MessageInputSchema, TenantSchema, isClusterUrl, agentVisibleTo, tenantOfWorkflowId, type AgentLimits, type AgentView, type Journal, type Page, type WorkflowDefinitionSchema } from '@durable-a2a/shared';
import { ProducerInputError, NotFoundError, ForbiddenError, QuotaExceededError, NoOpenQuestionError, RedisUnavailableError, RedisRefusingWritesError, producerErrorOfRedis } from './errors.ts';
import type { WorkflowView, OpenQuestion, WorkflowSummaryView } from './view.ts';
import { waitForWorkflow, type WaitForOptions } from './wait.ts';
import { closeProducer, connectProducer, connectedOrWaiting, readView, type ProducerContext, type ProducerOptions } from './calls/context.ts';
import { DelegateInputSchema, delegate, startWorkflow, type DelegateInput } from './calls/create.ts';
import { replyToQuestion, type ActorOptions, type ReplyAnswer, type ReplyOptions } from './calls/reply.ts';
import { cancelWorkflow, resolveAttention } from './calls/cancel.ts';
import { getAgent, listWorkflows, registerAgent, removeAgent, setAgentDisabled, setAgentLimits } from './calls/read.ts';
import { searchWorkflowSummaries, type WorkflowFilterInput } from './calls/search.ts';
import { bulkAct, type BulkAction, type BulkInput, type BulkResult } from './calls/bulk.ts';
import { OPERATOR_SCOPE, refuseQuotasOnCluster, requireOperator, requireWriter, resolveWorkflowId, seesAllTenants, type ProducerScope } from './tenancy.ts';
import { setTenantWeight, tenantWeight, tenantWeights, type TenantWeight } from './calls/tenants.ts';

export interface Producer {
  /** Starts (or returns, for the same idempotency key) a single delegation. The id is the workflow id. */
  delegate(input: DelegateInput): Promise<{ id: string; created: boolean; messageId: string }>;
  /** Starts a workflow; idempotent on `workflowId` (the same definition again returns it; a different one throws IdempotencyConflictError). */
  startWorkflow(definition: z.input<typeof WorkflowDefinitionSchema>): Promise<{ id: string; created: boolean }>;
  /** The journal view: every step and every attempt. Throws NotFoundError. */
  get(id: string): Promise<WorkflowView>;
  /**
   * Resolves with the view once the workflow is COMPLETED, COMPENSATED, FAILED, CANCELED or
   * NEEDS_ATTENTION (or, with `untilQuestion`, has an open question). Woken by the journal's
   * publish, not by polling. Rejects with NotFoundError, WaitTimeoutError (after `timeoutMs`,
   * carrying the last view) or the signal's abort reason.
   */
  waitFor(id: string, options?: WaitForOptions): Promise<WorkflowView>;
  /** Open questions (INPUT_REQUIRED / AUTH_REQUIRED) of a workflow. */
  questions(id: string): Promise<OpenQuestion[]>;
  /**
   * Answers a parked question on the same task and context. `step` defaults to the one asking. The same reply twice is
   * harmless (`created: false`, the earlier messageId); a different reply to an answered question throws
   * NoOpenQuestionError. `options.by`: who answered, kept in the workflow's history (docs/people.md "History").
   * `options.messageId`: the reply's identity; sent again, it is the reply journaled under it, wherever the workflow
   * moved since (`created: false`; other parts: IdempotencyConflictError).
   */
  reply(id: string, answer: ReplyAnswer, step?: string, options?: ReplyOptions): Promise<{ messageId: string; created: boolean }>;
  /** Cancels a workflow: running tasks get CancelTask; verified effects are compensated. `options.by`: who asked (history). Throws WorkflowFinishedError. */
  cancel(id: string, options?: ActorOptions): Promise<void>;
  /**
   * A person's decision on a workflow in NEEDS_ATTENTION; it always ends or moves the workflow, never back
   * to the same attention. `retry`: every AMBIGUOUS attempt is run again as a new attempt (new messageId;
   * the person accepts that the agent may have had the first), or for COMPENSATION_FAILED the failed
   * compensation as a new one; `abandon`: stop, undo what can be undone (a failed compensation is given
   * up, its effect left in place), else FAILED with the reason. Throws NotFoundError,
   * WorkflowFinishedError when the workflow is not waiting for a person (e.g. a second abandon), or
   * ResolutionNotAllowedError (`RESOLVE_ACTIONS`). `options.by`: who decided (history).
   */
  resolve(id: string, action: 'retry' | 'abandon', options?: ActorOptions): Promise<{ state: string }>;
  /**
   * Registers (or refreshes) an agent by its Agent Card URL, keyed by the normalized URL (`normalizeAgentCardUrl`):
   * another spelling of a registered agent's URL refreshes that one entry. `registration.tenant`: registered for that
   * tenant only, shared (null), or as it was (absent; a new agent is shared). Operators only. Throws AgentCardError,
   * ForbiddenError.
   */
  registerAgent(cardUrl: string, registration?: { tenant?: string | null }): Promise<AgentView>;
  /** Every registered agent this producer's scope sees (shared ones and its tenant's), with its id, status (active, disabled, unavailable) and health, in preference order. */
  listAgents(): Promise<AgentView[]>;
  /** One agent's view by id or card URL (any spelling). Throws NotFoundError. */
  getAgent(idOrCardUrl: string): Promise<AgentView>;
  /** Disables (never a candidate for a skill; bound delegations go on) or enables an agent by id or card URL. Throws NotFoundError. */
  setAgentDisabled(idOrCardUrl: string, disabled: boolean, reason?: string): Promise<AgentView>;
  /**
   * Sets (or, with undefined, clears) an agent's fleet-wide limits by id or card URL: SendMessage calls in flight at
   * once (`maxInFlight`), sends and resubscriptions per second (`rate`). Every worker honours them within
   * `agentLabelRefreshMs` (30 s by default). Throws NotFoundError, ValidationError for limits out of range.
   */
  setAgentLimits(idOrCardUrl: string, limits: AgentLimits | undefined): Promise<AgentView>;
  /** Every tenant whose send-queue weight was set, by name; the others weigh 1 (docs/flow-control.md "Tenants"). */
  tenantWeights(): Promise<Record<string, number>>;
  /** One tenant's send-queue weight (`set` false: the default, 1). Throws ProducerInputError for a name not 1 to 64 characters. */
  tenantWeight(tenant: string): Promise<TenantWeight>;
  /**
   * Sets a tenant's send-queue weight (a whole number 1 to 100) or, with undefined, clears it back to 1: a tenant of
   * weight 2 gets two sends for another's one while both have work waiting. Throws ProducerInputError (nothing written).
   */
  setTenantWeight(tenant: string, weight: number | undefined): Promise<TenantWeight>;
  /** Removes an agent by id or card URL (its card, mark and health; bound delegations go on). Throws NotFoundError. */
  removeAgent(idOrCardUrl: string): Promise<{ id: string; cardUrl: string }>;
  /** Workflow ids, optionally by state, paged by `cursor` (opaque). */
  listWorkflows(options?: { state?: string; cursor?: string; limit?: number }): Promise<{ ids: string[]; cursor?: string }>;
  /**
   * Workflow summaries matching `filter` (state, waiting, attention code, agent, metadata pairs, id prefix, created
   * range) through the search index, one page (limit ≤ 500); a page may hold fewer rows and still return a cursor.
   * Throws ProducerInputError.
   */
  search(filter: WorkflowFilterInput, options?: { cursor?: string; limit?: number }): Promise<Page<WorkflowSummaryView>>;
  /**
   * Cancels, resolves or retries one page (≤ 500) of the workflows a filter matches, each through `cancel` /
   * `resolve`; `dryRun` writes nothing. Per workflow: done (or would), or skipped with the code of why not.
   * Throws ProducerInputError (an empty filter; resolve without `resolution`).
   */
  bulk(action: BulkAction, input: BulkInput, options?: ActorOptions): Promise<BulkResult>;
  /** Who this producer acts for (tenancy.ts): its tenant and role. */
  readonly scope: ProducerScope;
  /**
   * The same producer (same connections) acting for `scope`: what a server does per request, with the tenant and role
   * of the caller's API token. Closing it closes the shared connections: close the producer `createProducer` gave.
   */
  forScope(scope: ProducerScope): Producer;
  /** The journal itself: every tenant's records, unscoped (a trusted caller's escape hatch). */
  journal: Journal;
  close(): Promise<void>;
}

/**
 * `options.redis`: a non-empty Redis URL or an ioredis client (anything with `duplicate()`, as BullMQ's queues need).
 * Checked before anything connects, so an unset `REDIS_URL` passed through is a `ProducerInputError` naming `redis`,
 * not a TypeError from deep inside.
 */
const RedisOptionSchema = z.union([
  z.string().min(1, 'a Redis URL (redis://…, redis-cluster://…, redis-sentinel://…) may not be empty'),
  z.custom<ProducerOptions['redis']>((value) => typeof value === 'object' && value !== null && typeof (value as { duplicate?: unknown }).duplicate === 'function', 'an ioredis client (Redis or Cluster)'),
]);

/**
 * Creates a producer. With `options.tenant`, a service of that tenant; without, the `default` tenant's operator
 * (tenancy.ts). Throws at once `ProducerInputError` (field `redis`) when `options.redis` is neither a Redis URL nor an
 * ioredis client (an unset `REDIS_URL`, say), and `QuotasOnClusterError` for `quotas` on a Redis Cluster (a
 * `redis-cluster://` URL or a Cluster client): they could not be applied there. Nothing else until used.
 */
export function createProducer(options: ProducerOptions): Producer {
  if (!RedisOptionSchema.safeParse(options?.redis).success) {
    const given = options?.redis === undefined ? 'undefined (is REDIS_URL set?)' : typeof options.redis === 'string' ? 'an empty string' : typeof options.redis;
    throw new ProducerInputError(`createProducer: \`redis\` must be a Redis URL (redis://…, redis-cluster://…, redis-sentinel://…) or an ioredis client; got ${given}`, 'redis');
  }
  refuseQuotasOnCluster(options.quotas, typeof options.redis === 'string' ? isClusterUrl(options.redis) : options.redis.isCluster, 'createProducer({ quotas })');
  const context = connectProducer(options);
  const scope: ProducerScope = options.tenant === undefined ? OPERATOR_SCOPE : { tenant: TenantSchema.parse(options.tenant), role: 'service' };
  return scopedProducer(context, scope);
}

/** The producer calls over `context` as `scope` sees them: ids resolved in its namespace, writes and registry changes checked against its role. */
function scopedProducer(context: ProducerContext, scope: ProducerScope): Producer {
  const view = (id: string, published?: string) => readView(context, id, published);
  const resolved = (id: string) => resolveWorkflowId(scope, id);
  /** A write to workflow `id`: resolved first (another tenant's is not found, not forbidden), then the role checked. */
  const writable = (id: string, what: string) => {
    const workflowId = resolved(id);
    requireWriter(scope, what);
    return workflowId;
  };
  const operatorOnly = <A extends unknown[], R>(what: string, call: (...args: A) => Promise<R>) => async (...args: A) => {
    requireOperator(scope, what);
    return call(...args);
  };
  const producer: Producer = {
    journal: context.journal,
    scope,
    forScope: (other) => scopedProducer(context, { tenant: TenantSchema.parse(other.tenant), role: other.role }),
    delegate: (input) => delegate(context, scope, input),
    startWorkflow: (definition) => startWorkflow(context, scope, definition),
    get: async (id) => view(resolved(id)),
    waitFor: async (id, waitOptions) => waitForWorkflow(context.changes, context.journal, view, resolved(id), waitOptions, () => connectedOrWaiting(context)),
    questions: async (id) => (await view(resolved(id))).openQuestions,
    reply: async (id, answer, step, actor) => replyToQuestion(context, writable(id, 'reply'), answer, step, actor),
    cancel: async (id, actor) => cancelWorkflow(context, writable(id, 'cancel'), actor),
    resolve: async (id, action, actor) => resolveAttention(context, writable(id, 'resolve'), action, actor),
    registerAgent: operatorOnly('registerAgent', (cardUrl: string, registration?: { tenant?: string | null }) => registerAgent(context, cardUrl, registration)),
    listAgents: async () => (await context.registry.views()).filter((agent) => seesAllTenants(scope) || agentVisibleTo(agent, scope.tenant)),
    getAgent: async (idOrCardUrl) => {
      const agent = await getAgent(context, idOrCardUrl);
      // Another tenant's agent does not exist for this caller, as its workflows do not.
      if (!seesAllTenants(scope) && !agentVisibleTo(agent, scope.tenant)) throw new NotFoundError(`no registered agent ${idOrCardUrl}`);
      return agent;
    },
    setAgentDisabled: operatorOnly('setAgentDisabled', (idOrCardUrl: string, disabled: boolean, reason?: string) => setAgentDisabled(context, idOrCardUrl, disabled, reason)),
    setAgentLimits: operatorOnly('setAgentLimits', (idOrCardUrl: string, limits: AgentLimits | undefined) => setAgentLimits(context, idOrCardUrl, limits)),
    removeAgent: operatorOnly('removeAgent', (idOrCardUrl: string) => removeAgent(context, idOrCardUrl)),
    tenantWeights: () => tenantWeights(context),
    tenantWeight: (tenant) => tenantWeight(context, tenant),
    setTenantWeight: operatorOnly('setTenantWeight', (tenant: string, weight: number | undefined) => setTenantWeight(context, tenant, weight)),
    listWorkflows: async (listOptions) => {
      const page = await listWorkflows(context, listOptions);
      return seesAllTenants(scope) ? page : { ...page, ids: page.ids.filter((id) => tenantOfWorkflowId(id) === scope.tenant) };
    },
    search: (filter, searchOptions) => searchWorkflowSummaries(context, scope, filter, searchOptions),
    bulk: (action, input, actor) => bulkAct(context, scope, action, input, actor),
    close: () => closeProducer(context),
  };
  for (const name of ['delegate', 'startWorkflow', 'get', 'questions', 'reply', 'cancel', 'resolve', 'registerAgent', 'listAgents', 'getAgent', 'setAgentDisabled', 'setAgentLimits', 'removeAgent', 'tenantWeights', 'tenantWeight', 'setTenantWeight', 'listWorkflows', 'search', 'bulk'] as const) {
    producer[name] = failFast(producer[name] as (...args: never[]) => Promise<unknown>, () => connectedOrWaiting(context)) as never;
  }
  return producer;
}

/**
 * Wraps a producer call: refuses at once while disconnected, and turns Redis errors into typed ones by kind
 * (`producerErrorOfRedis`: RedisRefusingWritesError, RedisUnavailableError; cause kept).
 */
function failFast<A extends never[], R>(call: (...args: A) => Promise<R>, connected: () => Promise<void> | undefined): (...args: A) => Promise<R> {
  return async (...args: A) => {
    const connecting = connected();
    if (connecting) await connecting;
    try {
      return await call(...args);
    } catch (error) {
      throw producerErrorOfRedis(error) ?? error;
    }
  };
}

export { DelegateInputSchema, type DelegateInput, type ProducerOptions };
export { ProducerInputError, NotFoundError, ForbiddenError, QuotaExceededError, NoOpenQuestionError, RedisUnavailableError, RedisRefusingWritesError, MessageInputSchema };
