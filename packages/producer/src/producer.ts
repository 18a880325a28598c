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
import type { z } from 'zod';
import { MessageInputSchema, type AgentLimits, type AgentView, type Journal, type Page, type WorkflowDefinitionSchema } from '@durable-a2a/shared';
import { ProducerInputError, NotFoundError, NoOpenQuestionError, RedisUnavailableError, RedisRefusingWritesError, producerErrorOfRedis } from './errors.ts';
import type { WorkflowView, OpenQuestion, WorkflowSummaryView } from './view.ts';
import { waitForWorkflow, type WaitForOptions } from './wait.ts';
import { closeProducer, connectProducer, ensureConnected, readView, type ProducerOptions } from './calls/context.ts';
import { DelegateInputSchema, delegate, startWorkflow, type DelegateInput } from './calls/create.ts';
import { replyToQuestion, type ActorOptions, type ReplyAnswer } from './calls/reply.ts';
import { cancelWorkflow, resolveAttention } from './calls/cancel.ts';
import { getAgent, listWorkflows, registerAgent, removeAgent, setAgentDisabled, setAgentLimits } from './calls/read.ts';
import { searchWorkflowSummaries, type WorkflowFilterInput } from './calls/search.ts';
import { bulkAct, type BulkAction, type BulkInput, type BulkResult } from './calls/bulk.ts';
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
   */
  reply(id: string, answer: ReplyAnswer, step?: string, options?: ActorOptions): Promise<{ messageId: string; created: boolean }>;
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
   * another spelling of a registered agent's URL refreshes that one entry. Throws AgentCardError.
   */
  registerAgent(cardUrl: string): Promise<AgentView>;
  /** Every registered agent with its id, status (active, disabled, unavailable) and health, in preference order. */
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
  journal: Journal;
  close(): Promise<void>;
}

/** Creates a producer. Throws nothing until used. */
export function createProducer(options: ProducerOptions): Producer {
  const context = connectProducer(options);
  const view = (id: string, published?: string) => readView(context, id, published);
  const producer: Producer = {
    journal: context.journal,
    delegate: (input) => delegate(context, input),
    startWorkflow: (definition) => startWorkflow(context, definition),
    get: view,
    waitFor: (id, waitOptions) => waitForWorkflow(context.changes, context.journal, view, id, waitOptions, () => ensureConnected(context)),
    questions: async (id) => (await view(id)).openQuestions,
    reply: (id, answer, step, actor) => replyToQuestion(context, id, answer, step, actor),
    cancel: (id, actor) => cancelWorkflow(context, id, actor),
    resolve: (id, action, actor) => resolveAttention(context, id, action, actor),
    registerAgent: (cardUrl) => registerAgent(context, cardUrl),
    listAgents: () => context.registry.views(),
    getAgent: (idOrCardUrl) => getAgent(context, idOrCardUrl),
    setAgentDisabled: (idOrCardUrl, disabled, reason) => setAgentDisabled(context, idOrCardUrl, disabled, reason),
    setAgentLimits: (idOrCardUrl, limits) => setAgentLimits(context, idOrCardUrl, limits),
    removeAgent: (idOrCardUrl) => removeAgent(context, idOrCardUrl),
    tenantWeights: () => tenantWeights(context),
    tenantWeight: (tenant) => tenantWeight(context, tenant),
    setTenantWeight: (tenant, weight) => setTenantWeight(context, tenant, weight),
    listWorkflows: (listOptions) => listWorkflows(context, listOptions),
    search: (filter, searchOptions) => searchWorkflowSummaries(context, filter, searchOptions),
    bulk: (action, input, actor) => bulkAct(context, action, input, actor),
    close: () => closeProducer(context),
  };
  for (const name of ['delegate', 'startWorkflow', 'get', 'questions', 'reply', 'cancel', 'resolve', 'registerAgent', 'listAgents', 'getAgent', 'setAgentDisabled', 'setAgentLimits', 'removeAgent', 'tenantWeights', 'tenantWeight', 'setTenantWeight', 'listWorkflows', 'search', 'bulk'] as const) {
    producer[name] = failFast(producer[name] as (...args: never[]) => Promise<unknown>, () => ensureConnected(context)) as never;
  }
  return producer;
}

/**
 * Wraps a producer call: refuses at once while disconnected, and turns Redis errors into typed ones by kind
 * (`producerErrorOfRedis`: RedisRefusingWritesError, RedisUnavailableError; cause kept).
 */
function failFast<A extends never[], R>(call: (...args: A) => Promise<R>, ensureConnected: () => Promise<void>): (...args: A) => Promise<R> {
  return async (...args: A) => {
    await ensureConnected();
    try {
      return await call(...args);
    } catch (error) {
      throw producerErrorOfRedis(error) ?? error;
    }
  };
}

export { DelegateInputSchema, type DelegateInput, type ProducerOptions };
export { ProducerInputError, NotFoundError, NoOpenQuestionError, RedisUnavailableError, RedisRefusingWritesError, MessageInputSchema };
