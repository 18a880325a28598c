/**
 * Starting work: `delegate` (one message to one agent) and `startWorkflow`. Journal first: the
 * workflow and the first attempt of every step whose agent is known are journaled before any I/O,
 * then enqueued; a crash in between leaves a journaled intent that the reconciler finds and sends.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { JsonObjectSchema, PartSchema } from '@durable-a2a/a2a';
import {
  candidateAgents,
  ID_PATTERN,
  WorkflowDefinitionSchema,
  WORKFLOW_ID_PATTERN,
  StrictQuestionPolicySchema,
  SPAN_ATTRIBUTES,
  SendPrioritySchema,
  attemptMessage,
  buildIntent,
  connectionGeneration,
  delegationSpan,
  enqueueDecide,
  enqueueSend,
  firstAttempts,
  JournalError,
  keepParsedDefinition,
  searchableMetadata,
  tenantOfWorkflowId,
  withSpan,
  workflowChangeChannel,
  type Step,
} from '@durable-a2a/shared';
import { IdempotencyConflictError, QuotaExceededError } from '../errors.ts';
import { createdWorkflowId, quotaOf, requireWriter, type ProducerScope } from '../tenancy.ts';
import { checkAgentAddresses } from '../agent-addresses.ts';
import { StrictNotifyTargetSchema, StrictWorkflowDefinitionSchema } from '../definition.ts';
import { parseInput, type ProducerContext } from './context.ts';

const IdempotencyKey = z.string().regex(ID_PATTERN, 'letters, digits, ".", "_" or "-", 1 to 128 characters');
/** An http(s) Agent Card URL or agent base URL. */
export const AgentUrl = z.url({ protocol: /^https?$/, error: 'an http(s) Agent Card URL or agent base URL' });

/** The policy of a producer given none: one object, so the allowed agent addresses are kept for it (`checkAgentAddresses`). */
const NO_ADDRESS_POLICY = {};

/** `delegate` input: one message to one agent. */
export const DelegateInputSchema = z
  .strictObject({
    agent: AgentUrl,
    text: z.string().min(1, 'must not be empty').optional(),
    parts: z.array(PartSchema).min(1, 'must not be empty').optional(),
    idempotencyKey: IdempotencyKey.optional(),
    metadata: JsonObjectSchema.optional(),
    push: z.boolean().optional(),
    /** Where this delegation's notifications go (docs/people.md "Notifications"); default the fleet-wide `DA2A_NOTIFY_URL`. */
    notify: StrictNotifyTargetSchema.optional(),
    /** How long (ms) to wait for the agent while it cannot be reached before the delegation ends FAILED `AGENT_UNREACHABLE`. Default: the attempt deadline. */
    unreachableForMs: z.number().int().positive().optional(),
    /** The life of the agent's questions: expiry and what is done then, reminders (`StrictQuestionPolicySchema`). Default: a question waits until the attempt deadline. */
    question: StrictQuestionPolicySchema.optional(),
    /** Priority of its sends, 1 (lowest) to 10 (highest); default 5 (`send-priority.ts`). */
    priority: SendPrioritySchema.optional(),
  })
  .refine((input) => (input.text === undefined) !== (input.parts === undefined), { message: 'give exactly one of text or parts', path: ['text'] });
export type DelegateInput = z.input<typeof DelegateInputSchema>;

type Definition = z.output<typeof WorkflowDefinitionSchema>;

/**
 * The first attempts, from the same decider as the workers' (one decider): a fixed agent first, then
 * the registered agents with the step's skill. Steps waiting for earlier steps come out held.
 */
async function firstIntents(context: ProducerContext, definition: Definition, now: number): Promise<Record<string, string>[]> {
  const workflowId = definition.workflowId;
  const registered = definition.steps.some((step) => step.skill) ? await context.registry.list() : [];
  const candidates = (step: Step) => candidateAgents(step, registered, tenantOfWorkflowId(workflowId));
  return firstAttempts(definition, candidates).map(({ step, agentCardUrl, held }) =>
    buildIntent({ workflowId, step: step.name, attempt: 1, agentCardUrl, message: attemptMessage(step, [], workflowId, 1), push: step.push, held, now, priority: definition.priority }),
  );
}

/**
 * Journals the rest of the first attempts and enqueues the ones not held (only when this call created the workflow).
 * `places`: the sends' places among their tenant's, one per send, taken with the create (`createWorkflowPlaced`).
 */
async function sendFirstAttempts(context: ProducerContext, definition: Definition, intents: Record<string, string>[], places: readonly number[]): Promise<void> {
  const workflowId = definition.workflowId;
  for (const intent of intents.slice(1)) await context.journal.createIntent(workflowId, intent);
  const sends = intents.filter((candidate) => candidate.held !== '1');
  for (const [index, intent] of sends.entries()) {
    const place = places[index] === undefined ? {} : { place: places[index] };
    await delegationSpan({ ...intent, workflowId, delegationId: intent.delegationId! }, () =>
      enqueueSend(context.queues, { workflowId, delegationId: intent.delegationId! }, 0, undefined, 0, { priority: definition.priority, ...place }),
    );
  }
  // A step whose agent is not known yet (no registered agent with its skill): let the workers decide now.
  if (intents.length < definition.steps.length) await enqueueDecide(context.queues, workflowId, { by: 'start' });
}

/**
 * Journals the workflow and the first attempt of every step whose agent is
 * known now (a fixed agent, or the first registered agent with the skill)
 * before any I/O. Steps waiting for earlier steps are journaled held. The search index finds it by its metadata
 * (`searchableMetadata`).
 * @throws IdempotencyConflictError when the workflow id is taken by a different definition.
 */
async function create(context: ProducerContext, definition: Definition): Promise<{ id: string; created: boolean; messageId?: string }> {
  const { journal } = context;
  const workflowId = definition.workflowId;
  const now = Date.now();
  const generation = connectionGeneration(context.redis);
  const intents = await firstIntents(context, definition, now);
  const tenant = tenantOfWorkflowId(workflowId);
  const definitionText = JSON.stringify(definition);
  const quota = quotaOf(context.options.quotas, tenant);
  // The sends' places among their tenant's are taken with the creation (`createWorkflowPlaced`), so the enqueue after
  // it waits for no round trip of its own.
  const places = { count: intents.filter((intent) => intent.held !== '1').length, windowMs: context.sendOrder.windowMs };
  // While the change subscriber's pattern is confirmed, what the new workflow's channel publishes is kept for its
  // first wait, which then needs no read of its state (`watchCreation`).
  const watch = context.changes.watchCreation(workflowChangeChannel(journal, workflowId));
  // The workflow itself is indexed until it finishes (entry `*`, with the first intent's), so a crash anywhere is decided again.
  const creating = journal
    .createWorkflowPlaced(
      workflowId,
      { state: 'RUNNING', definition: definitionText, createdAt: String(now), updatedAt: String(now) },
      intents[0],
      now + 5_000,
      searchableMetadata(definition),
      quota,
      places,
    )
    .catch((error: unknown) => {
      if (error instanceof JournalError && (error.code === 'QUOTA_IN_FLIGHT' || error.code === 'QUOTA_STORED')) throw quotaExceeded(tenant, error.code);
      throw error;
    });
  let answer: Awaited<typeof creating> | undefined;
  try {
    answer = await creating;
  } finally {
    // Not created (it existed, or the create failed): its first wait reads its state.
    if (watch) context.changes.settleCreation(watch, answer?.created === true);
  }
  const { created, places: placed } = answer;
  if (created) {
    // The view (`waitFor`, `get`) reads this text back: its parse is the definition validated here.
    keepParsedDefinition(definitionText, definition);
    await sendFirstAttempts(context, definition, intents, placed);
  }
  if (!created) {
    // Same key, different request: refuse rather than silently return the other one.
    const existing = await journal.getWorkflow(workflowId);
    if (existing && existing.definitionText !== definitionText) {
      throw new IdempotencyConflictError(`${workflowId} is already used by a different workflow or delegation`);
    }
  }
  const firstStep = definition.steps[0]!.name;
  // Created with its first intent: that intent's messageId, else (it existed) the journaled one.
  const first = intents[0];
  const messageId = created && first?.delegationId === `${firstStep}.1` ? first.messageId : (await journal.getDelegation({ workflowId, delegationId: `${firstStep}.1` }))?.messageId;
  // Acknowledged only once on the replicas (also when it already existed: an earlier call may have timed out here).
  await journal.awaitReplicas(workflowId, generation);
  return { id: workflowId, created, messageId };
}

/** How long a creation refused at a quota is told to wait (ms): a place in flight frees as a workflow finishes, a stored one at retention. */
export const QUOTA_RETRY_AFTER_MS = { inFlight: 5_000, stored: 60_000 } as const;

function quotaExceeded(tenant: string, code: 'QUOTA_IN_FLIGHT' | 'QUOTA_STORED'): QuotaExceededError {
  const quota = code === 'QUOTA_IN_FLIGHT' ? 'inFlight' : 'stored';
  const what = quota === 'inFlight' ? 'unfinished workflows (maxInFlight)' : 'kept workflows (maxStored)';
  return new QuotaExceededError(`tenant ${tenant} has its quota of ${what}; nothing was written`, tenant, quota, QUOTA_RETRY_AFTER_MS[quota]);
}

/**
 * `Producer.delegate`: a one-step workflow (max one attempt) whose id is the idempotency key, else a new UUID, in the
 * scope's tenant (its id `createdWorkflowId`).
 * @throws ProducerInputError, AgentAddressRefusedError (the agent's address is refused by `addressPolicy`, nothing written), IdempotencyConflictError,
 *   ForbiddenError (a viewer), QuotaExceededError
 */
export async function delegate(context: ProducerContext, scope: ProducerScope, input: DelegateInput): Promise<{ id: string; created: boolean; messageId: string }> {
  requireWriter(scope, 'delegate');
  const parsed = parseInput(DelegateInputSchema, input);
  const definition = delegationDefinition(createdWorkflowId(scope, parsed.idempotencyKey ?? randomUUID()), parsed);
  await checkAgentAddresses({ agent: parsed.agent, ...(parsed.notify ? { notify: parsed.notify } : {}) }, context.options.addressPolicy ?? NO_ADDRESS_POLICY);
  const result = await withSpan('workflow.start', { [SPAN_ATTRIBUTES.workflowId]: definition.workflowId }, () => create(context, definition));
  return { id: result.id, created: result.created, messageId: result.messageId ?? '' };
}

/**
 * The one-step workflow of a delegation, `parsed` being `DelegateInputSchema`'s output: what
 * `WorkflowDefinitionSchema.parse` gives for it (the same keys in the same order, so the same journaled text), built
 * without parsing again, since `DelegateInputSchema` validated every field under the same rules
 * (packages/producer/test/delegate-definition.test.ts holds the two equal). A stored id the definition would refuse
 * is parsed, to throw the same ProducerInputError.
 */
export function delegationDefinition(workflowId: string, parsed: z.output<typeof DelegateInputSchema>): Definition {
  const metadata = parsed.metadata ? { metadata: parsed.metadata } : {};
  const message = parsed.text !== undefined ? { text: parsed.text, ...metadata } : { parts: parsed.parts!, ...metadata };
  // WorkflowDefinitionSchema's output order: the step's target (`agent`, its intersection's first part), then its own fields.
  const step = { agent: parsed.agent, name: 'main', message, ...(parsed.push !== undefined ? { push: parsed.push } : {}), ...(parsed.unreachableForMs ? { unreachableForMs: parsed.unreachableForMs } : {}), ...(parsed.question ? { question: parsed.question } : {}) };
  const notify = parsed.notify ? { notify: parsed.notify } : {};
  const priority = parsed.priority !== undefined ? { priority: parsed.priority } : {};
  if (!WORKFLOW_ID_PATTERN.test(workflowId)) return parseInput(WorkflowDefinitionSchema, { workflowId, steps: [step], maxAttemptsPerStep: 1, ...notify, ...priority });
  return { workflowId, steps: [step], maxAttemptsPerStep: 1, ...priority, ...notify };
}

/**
 * `Producer.startWorkflow`: validates strictly (every fixed agent address under `addressPolicy`), then journals and
 * enqueues the first attempts, in the scope's tenant (the stored id `createdWorkflowId` of the given `workflowId`).
 * @throws ProducerInputError, AgentAddressRefusedError (`field` names the step), IdempotencyConflictError, ForbiddenError (a viewer), QuotaExceededError
 */
export async function startWorkflow(context: ProducerContext, scope: ProducerScope, definition: z.input<typeof WorkflowDefinitionSchema>): Promise<{ id: string; created: boolean }> {
  requireWriter(scope, 'startWorkflow');
  const strict = parseInput(StrictWorkflowDefinitionSchema, definition);
  const parsed = parseInput(WorkflowDefinitionSchema, { ...strict, workflowId: createdWorkflowId(scope, strict.workflowId) });
  await checkAgentAddresses(parsed, context.options.addressPolicy ?? NO_ADDRESS_POLICY);
  const { id, created } = await withSpan('workflow.start', { [SPAN_ATTRIBUTES.workflowId]: parsed.workflowId }, () => create(context, parsed));
  return { id, created };
}
