/**
 * What a service imports to start and inspect work. Every call validates its
 * input with zod before anything is written, and writes the journal before it
 * enqueues: a crash in between leaves a journaled intent that the reconciler
 * finds and sends.
 */
import { randomUUID } from 'node:crypto';
import { Queue, type Telemetry } from 'bullmq';
import type { Cluster, Redis } from 'ioredis';
import { z } from 'zod';
import {
  AgentRegistry,
  DEFAULT_JOB_OPTIONS,
  ID_PATTERN,
  JOB_RETENTION,
  Journal,
  JournalError,
  MessageInputSchema,
  PartSchema,
  WorkflowDefinitionSchema,
  attemptMessage,
  buildIntent,
  enqueueCancel,
  enqueueDecide,
  enqueueReply,
  enqueueSend,
  fetchAgentCard,
  firstAttempts,
  queuePrefix,
  createPolicyDispatcher,
  createRedisClient,
  delegationSpan,
  withSpan,
  SPAN_ATTRIBUTES,
  createFailFastRedisClient,
  isRedisUnavailableError,
  waitUntilConnected,
  DEFAULT_COMMAND_TIMEOUT_MS,
  type A2ALimits,
  connectionGeneration,
  type JournalDurability,
  type AddressPolicyOptions,
  type RegisteredAgent,
  type Step,
} from '@durable-a2a/shared';
import { ProducerInputError, NotFoundError, NoOpenQuestionError, IdempotencyConflictError, RedisUnavailableError, WorkflowFinishedError, fromZodError } from './errors.ts';
import { StrictWorkflowDefinitionSchema } from './definition.ts';
import { workflowView, type WorkflowView, type OpenQuestion } from './view.ts';
import { WorkflowChangeSubscriber, waitForWorkflow, type WaitForOptions } from './wait.ts';

export interface ProducerOptions {
  /** A Redis URL (`redis://…`, `redis-cluster://host:port,…` or `redis-sentinel://host:port,…/<master name>`) or an ioredis client (not closed by `close()` when passed in). */
  redis: string | Redis | Cluster;
  /** Key prefix shared with the workers. Default `da2a`. */
  prefix?: string;
  /** How long finished records are kept. Default 7 days. */
  retentionMs?: number;
  /**
   * Which agent addresses `registerAgent` accepts (field case R19). Default: public only; loopback,
   * private, link-local and metadata addresses are refused, also after redirects and DNS changes.
   */
  addressPolicy?: AddressPolicyOptions;
  /** BullMQ telemetry (`startTracing().telemetry`): the producer's spans become the parents of the workers'. Default none. */
  telemetry?: Telemetry;
  /**
   * Fail fast (BullMQ's producer guidance): a Redis command unanswered this long, or any command
   * while disconnected, rejects with RedisUnavailableError; nothing is replayed later. Only applies
   * when `redis` is a URL. Default 2_000.
   */
  commandTimeoutMs?: number;
  /** Input limits for the Agent Card fetch of `registerAgent` (`agentCardBytes`, `jsonDepth`; default 1 MiB, 64). */
  limits?: Partial<A2ALimits>;
  /**
   * Replicas that must acknowledge a new workflow before `delegate` / `startWorkflow` answer (WAIT);
   * default none. On a timeout they throw `ReplicationTimeoutError` (`REPLICATION_TIMEOUT`, retryable
   * with the same idempotency key or workflowId).
   */
  durability?: JournalDurability;
}

const IdempotencyKey = z.string().regex(ID_PATTERN, 'letters, digits, ".", "_" or "-", 1 to 128 characters');
const AgentUrl = z.url({ protocol: /^https?$/, error: 'an http(s) Agent Card URL or agent base URL' });

/** `delegate` input: one message to one agent. */
export const DelegateInputSchema = z
  .strictObject({
    agent: AgentUrl,
    text: z.string().min(1, 'must not be empty').optional(),
    parts: z.array(PartSchema).min(1, 'must not be empty').optional(),
    idempotencyKey: IdempotencyKey.optional(),
    metadata: z.record(z.string(), z.unknown()).optional(),
    push: z.boolean().optional(),
  })
  .refine((input) => (input.text === undefined) !== (input.parts === undefined), { message: 'give exactly one of text or parts', path: ['text'] });
export type DelegateInput = z.input<typeof DelegateInputSchema>;

const ReplySchema = z.union([z.string().min(1, 'must not be empty'), z.object({ parts: z.array(PartSchema).min(1) })]);

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
  /** Answers a parked question on the same task and context. `step` defaults to the one asking. Answering twice is harmless. */
  reply(id: string, answer: string | { parts: z.infer<typeof PartSchema>[] }, step?: string): Promise<{ messageId: string; created: boolean }>;
  /** Cancels a workflow: running tasks get CancelTask; verified effects are compensated. Throws WorkflowFinishedError. */
  cancel(id: string): Promise<void>;
  /**
   * A person's decision on a workflow in NEEDS_ATTENTION. `retry`: every AMBIGUOUS attempt is run
   * again as a new attempt (new messageId; the person accepts that the agent may have had the first);
   * `abandon`: stop, compensate what has an effect. Throws NotFoundError, or WorkflowFinishedError when
   * the workflow is not waiting for a person.
   */
  resolve(id: string, action: 'retry' | 'abandon'): Promise<{ state: string }>;
  /** Registers (or refreshes) an agent by its Agent Card URL. Throws AgentCardError. */
  registerAgent(cardUrl: string): Promise<RegisteredAgent>;
  listAgents(): Promise<RegisteredAgent[]>;
  /** Workflow ids, optionally by state, paged by `cursor` (opaque). */
  listWorkflows(options?: { state?: string; cursor?: string; limit?: number }): Promise<{ ids: string[]; cursor?: string }>;
  journal: Journal;
  close(): Promise<void>;
}

/** Creates a producer. Throws nothing until used. */
export function createProducer(options: ProducerOptions): Producer {
  const ownsRedis = typeof options.redis === 'string';
  const redis = typeof options.redis === 'string' ? createFailFastRedisClient(options.redis, options.commandTimeoutMs) : options.redis;
  // ioredis reconnects on its own; failed commands reject to the caller, so connection events need no log here.
  if (ownsRedis) redis.on('error', () => undefined);
  const prefix = options.prefix ?? 'da2a';
  const journal = new Journal(redis, { prefix, retentionMs: options.retentionMs, durability: options.durability });
  const registry = new AgentRegistry(redis, prefix);
  const queue = (name: 'send' | 'reconcile') =>
    new Queue(name, { connection: redis, prefix: queuePrefix(prefix), telemetry: options.telemetry, defaultJobOptions: { ...DEFAULT_JOB_OPTIONS[name], ...JOB_RETENTION } });
  const cardDispatcher = createPolicyDispatcher(options.addressPolicy ?? {});
  const send = queue('send');
  const reconcile = queue('reconcile');
  const queues = { send, reconcile };
  const changes = new WorkflowChangeSubscriber(redis);
  for (const each of [send, reconcile]) each.on('error', () => undefined); // surfaced per call as RedisUnavailableError

  /**
   * Before any call: wait for the connection at most the command timeout,
   * then refuse, so no BullMQ call waits for a reconnect and runs after the
   * caller was told the call failed.
   */
  const ensureConnected = async () => {
    if (!(await waitUntilConnected(redis, options.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS))) {
      throw new RedisUnavailableError(`Redis is not connected (${redis.status}); nothing was written`);
    }
  };

  /**
   * Journals the workflow and the first attempt of every step whose agent is
   * known now (a fixed agent, or the first registered agent with the skill)
   * before any I/O. Steps waiting for earlier steps are journaled held.
   */
  async function create(definition: z.output<typeof WorkflowDefinitionSchema>): Promise<{ id: string; created: boolean; messageId?: string }> {
    const workflowId = definition.workflowId;
    const now = Date.now();
    const generation = connectionGeneration(redis);
    // The same decider as the workers' (one decider): a fixed agent first, then registered agents with the skill.
    const bySkill = new Map<Step, string[]>();
    for (const step of definition.steps) {
      if (step.skill) bySkill.set(step, (await registry.findBySkill(step.skill, 'tags' in step ? (step.tags ?? []) : [])).map((agent) => agent.cardUrl));
    }
    const candidates = (step: Step) => [...new Set([...('agent' in step && step.agent ? [step.agent] : []), ...(bySkill.get(step) ?? [])])];
    const intents = firstAttempts(definition, candidates).map(({ step, agentCardUrl, held }) =>
      buildIntent({ workflowId, step: step.name, attempt: 1, agentCardUrl, message: attemptMessage(step, [], workflowId, 1), push: step.push, held, now }),
    );
    // The workflow itself is indexed until it finishes, so a crash anywhere is decided again.
    await journal.scheduleCheck({ workflowId, delegationId: '*' }, now + 5_000);
    const [first, ...rest] = intents;
    const created = await journal.createWorkflow(
      workflowId,
      { state: 'RUNNING', definition: JSON.stringify(definition), createdAt: String(now), updatedAt: String(now) },
      first,
    );
    if (created) {
      for (const intent of rest) await journal.createIntent(workflowId, intent);
      for (const intent of intents.filter((candidate) => candidate.held !== '1')) {
        await delegationSpan({ ...intent, workflowId, delegationId: intent.delegationId! }, () =>
          enqueueSend(queues, { workflowId, delegationId: intent.delegationId! }, 0),
        );
      }
      // A step whose agent is not known yet (no registered agent with its skill): let the workers decide now.
      if (intents.length < definition.steps.length) await enqueueDecide(queues, workflowId, { by: 'start' });
    }
    if (!created) {
      // Same key, different request: refuse rather than silently return the other one.
      const existing = await journal.getWorkflow(workflowId);
      if (existing && existing.definitionText !== JSON.stringify(definition)) {
        throw new IdempotencyConflictError(`${workflowId} is already used by a different workflow or delegation`);
      }
    }
    const firstStep = definition.steps[0]!.name;
    const messageId = (await journal.getDelegation({ workflowId, delegationId: `${firstStep}.1` }))?.messageId;
    // Acknowledged only once on the replicas (also when it already existed: an earlier call may have timed out here).
    await journal.awaitReplicas(workflowId, generation);
    return { id: workflowId, created, messageId };
  }

  const parse = <T extends z.ZodType>(schema: T, input: unknown): z.output<T> => {
    const result = schema.safeParse(input);
    if (!result.success) throw fromZodError(result.error);
    return result.data;
  };

  const view = async (id: string) => {
    const found = await workflowView(journal, id);
    if (!found) throw new NotFoundError(`workflow ${id} not found`);
    return found;
  };

  const producer: Producer = {
    journal,
    async delegate(input) {
      const parsed = parse(DelegateInputSchema, input);
      const message = parsed.text !== undefined ? { text: parsed.text, metadata: parsed.metadata } : { parts: parsed.parts!, metadata: parsed.metadata };
      const definition = parse(WorkflowDefinitionSchema, {
        workflowId: parsed.idempotencyKey ?? randomUUID(),
        steps: [{ name: 'main', agent: parsed.agent, message, push: parsed.push }],
        maxAttemptsPerStep: 1,
      });
      const result = await withSpan('workflow.start', { [SPAN_ATTRIBUTES.workflowId]: definition.workflowId }, () => create(definition));
      return { id: result.id, created: result.created, messageId: result.messageId ?? '' };
    },
    async startWorkflow(definition) {
      const parsed = parse(WorkflowDefinitionSchema, parse(StrictWorkflowDefinitionSchema, definition));
      const { id, created } = await withSpan('workflow.start', { [SPAN_ATTRIBUTES.workflowId]: parsed.workflowId }, () => create(parsed));
      return { id, created };
    },
    get: view,
    waitFor: (id, waitOptions) => waitForWorkflow(changes, journal, view, id, waitOptions),
    async questions(id) {
      return (await view(id)).openQuestions;
    },
    async reply(id, answer, step) {
      const parsedAnswer = parse(ReplySchema, answer);
      const current = await view(id);
      if (step !== undefined && !current.steps.some((candidate) => candidate.name === step)) throw new NotFoundError(`workflow ${id} has no step ${step}`);
      const question = current.openQuestions.find((open) => step === undefined || open.step === step);
      if (!question) {
        // Answering twice is harmless: the last reply of that step is returned.
        const answered = current.steps
          .filter((candidate) => step === undefined || candidate.name === step)
          .flatMap((candidate) => candidate.attempts)
          .reverse()
          .find((attempt) => attempt.replyMessageId);
        if (answered) return { messageId: answered.replyMessageId!, created: false };
        throw new NoOpenQuestionError(`workflow ${id} has no open question${step ? ` on step ${step}` : ''}`);
      }
      const parts = typeof parsedAnswer === 'string' ? [{ text: parsedAnswer }] : parsedAnswer.parts;
      const ref = { workflowId: id, delegationId: question.delegationId };
      const reply = await journal.recordReply(ref, randomUUID(), { parts });
      await withSpan('workflow.reply', { [SPAN_ATTRIBUTES.workflowId]: id, [SPAN_ATTRIBUTES.delegationId]: question.delegationId, [SPAN_ATTRIBUTES.messageId]: reply.messageId }, () =>
        enqueueReply(queues, ref, reply.messageId),
      );
      return reply;
    },
    async cancel(id) {
      const current = await view(id);
      try {
        await journal.updateWorkflow(id, { cancelRequested: true });
      } catch (error) {
        if (error instanceof JournalError && error.code === 'WRONG_STATE') throw new WorkflowFinishedError(`workflow ${id} already finished (${current.state})`);
        throw error;
      }
      for (const step of current.steps) {
        for (const attempt of step.attempts) {
          if (!attempt.finished) {
            await enqueueCancel(queues, { workflowId: id, delegationId: attempt.delegationId }, { by: 'user' });
          }
        }
      }
      await enqueueDecide(queues, id, { by: 'cancel', at: Date.now() });
    },
    async resolve(id, action) {
      const current = await view(id);
      if (current.state !== 'NEEDS_ATTENTION') throw new WorkflowFinishedError(`workflow ${id} is ${current.state}, not waiting for a person`);
      const ambiguous = current.steps.flatMap((step) => step.attempts).filter((attempt) => attempt.state === 'AMBIGUOUS').map((attempt) => attempt.delegationId);
      const record = await journal.getWorkflow(id);
      const approved = [...new Set([...(record?.retryApproved ?? []), ...ambiguous])];
      // Abandoning stops the workflow as a person's decision: what can be undone is, the rest ends FAILED with
      // the reason (never CANCELED: the attempt the person looked at may have had an effect).
      const abandoned = [`abandoned by a person (${current.attention?.code ?? 'UNSPECIFIED'}): ${current.attention?.message ?? 'no reason recorded'}`];
      await journal.updateWorkflow(
        id,
        action === 'retry' ? { state: 'RUNNING', attention: null, retryApproved: approved } : { state: 'RUNNING', attention: null, cancelRequested: true, stopping: abandoned },
      );
      await journal.scheduleCheck({ workflowId: id, delegationId: '*' }, Date.now());
      await enqueueDecide(queues, id, { by: 'resolve', at: Date.now() });
      return { state: 'RUNNING' };
    },
    async registerAgent(cardUrl) {
      const url = parse(AgentUrl, cardUrl);
      const card = await fetchAgentCard(url, { dispatcher: cardDispatcher, addressPolicy: options.addressPolicy ?? {}, limits: options.limits });
      return registry.register(url, card);
    },
    listAgents: () => registry.list(),
    async listWorkflows(listOptions = {}) {
      const limit = Math.min(Math.max(listOptions.limit ?? 50, 1), 500);
      const { ids, cursor } = await journal.listWorkflowIds(listOptions.cursor, limit);
      let selected = ids;
      if (listOptions.state) {
        const states = await journal.workflowStates(ids);
        selected = ids.filter((_, index) => states[index] === listOptions.state);
      }
      return { ids: selected, cursor };
    },
    async close() {
      if (redis.status !== 'ready') {
        // Redis down: quit/close would wait for a reconnect that may never come.
        if (ownsRedis) redis.disconnect();
        await Promise.all([send.disconnect(), reconcile.disconnect(), cardDispatcher.close(), changes.close()].map((closing) => closing.catch(() => undefined)));
        return;
      }
      await Promise.all([send.close(), reconcile.close(), cardDispatcher.close(), changes.close()]);
      if (ownsRedis) await redis.quit();
    },
  };
  for (const name of ['delegate', 'startWorkflow', 'get', 'questions', 'reply', 'cancel', 'resolve', 'registerAgent', 'listAgents', 'listWorkflows'] as const) {
    producer[name] = failFast(producer[name] as (...args: never[]) => Promise<unknown>, ensureConnected) as never;
  }
  return producer;
}

/** Wraps a producer call: refuses at once while disconnected, and turns connection failures into RedisUnavailableError (cause kept). */
function failFast<A extends never[], R>(call: (...args: A) => Promise<R>, ensureConnected: () => Promise<void>): (...args: A) => Promise<R> {
  return async (...args: A) => {
    await ensureConnected();
    try {
      return await call(...args);
    } catch (error) {
      if (isRedisUnavailableError(error)) throw new RedisUnavailableError(`Redis unavailable: ${(error as Error).message}`, { cause: error });
      throw error;
    }
  };
}

export { ProducerInputError, NotFoundError, NoOpenQuestionError, RedisUnavailableError, MessageInputSchema };
