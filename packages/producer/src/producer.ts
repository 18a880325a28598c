/**
 * What a service imports to start and inspect work. Every call validates its
 * input with zod before anything is written, and writes the journal before it
 * enqueues: a crash in between leaves a journaled intent that the reconciler
 * finds and sends.
 */
import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
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
  buildIntent,
  dependenciesOf,
  fetchAgentCard,
  jobId,
  queuePrefix,
  createPolicyDispatcher,
  createRedisClient,
  connectionGeneration,
  type JournalDurability,
  type AddressPolicyOptions,
  type RegisteredAgent,
} from '@durable-a2a/shared';
import { ProducerInputError, NotFoundError, NoOpenQuestionError, IdempotencyConflictError, WorkflowFinishedError, fromZodError } from './errors.ts';
import { workflowView, type WorkflowView, type OpenQuestion } from './view.ts';

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
  .object({
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
  const redis = typeof options.redis === 'string' ? createRedisClient(options.redis) : options.redis;
  // ioredis retries on its own; failed commands reject to the caller, so connection events need no log here.
  if (ownsRedis) redis.on('error', () => undefined);
  const prefix = options.prefix ?? 'da2a';
  const journal = new Journal(redis, { prefix, retentionMs: options.retentionMs, durability: options.durability });
  const registry = new AgentRegistry(redis, prefix);
  const queue = (name: 'send' | 'reconcile') =>
    new Queue(name, { connection: redis, prefix: queuePrefix(prefix), defaultJobOptions: { ...DEFAULT_JOB_OPTIONS[name], ...JOB_RETENTION } });
  const cardDispatcher = createPolicyDispatcher(options.addressPolicy ?? {});
  const send = queue('send');
  const reconcile = queue('reconcile');

  /**
   * Journals the workflow and the first attempt of every step whose agent is
   * known now (a fixed agent, or the first registered agent with the skill)
   * before any I/O. Steps waiting for earlier steps are journaled held.
   */
  async function create(definition: z.output<typeof WorkflowDefinitionSchema>): Promise<{ id: string; created: boolean; messageId?: string }> {
    const workflowId = definition.workflowId;
    const now = Date.now();
    const generation = connectionGeneration(redis);
    const intents: Record<string, string>[] = [];
    for (const [index, step] of definition.steps.entries()) {
      const agent = 'agent' in step && step.agent ? step.agent : (await registry.findBySkill(step.skill!, 'tags' in step ? (step.tags ?? []) : []))[0]?.cardUrl;
      if (!agent) continue; // the workers decide (and fail the step if no agent has the skill)
      intents.push(
        buildIntent({
          workflowId,
          step: step.name,
          attempt: 1,
          agentCardUrl: agent,
          message: {
            parts: 'text' in step.message ? [{ text: step.message.text }] : step.message.parts,
            metadata: { ...(step.message.metadata ?? {}), durableA2a: { workflowId, step: step.name, attempt: 1 } },
          },
          push: step.push,
          held: dependenciesOf(definition.steps, index).length > 0,
          now,
        }),
      );
    }
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
        await send.add('send', { workflowId, delegationId: intent.delegationId, kind: 'message' }, { jobId: jobId('send', workflowId, intent.delegationId!, 0) });
      }
      // A step whose agent is not known yet (no registered agent with its skill): let the workers decide now.
      if (intents.length < definition.steps.length) {
        await reconcile.add('delegation', { workflowId, delegationId: '*' }, { jobId: jobId('reconcile', workflowId, 'start') });
      }
    }
    if (!created) {
      // Same key, different request: refuse rather than silently return the other one.
      const existing = await journal.getWorkflowHash(workflowId);
      if (existing && existing.definition !== JSON.stringify(definition)) {
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

  return {
    journal,
    async delegate(input) {
      const parsed = parse(DelegateInputSchema, input);
      const message = parsed.text !== undefined ? { text: parsed.text, metadata: parsed.metadata } : { parts: parsed.parts!, metadata: parsed.metadata };
      const result = await create(
        parse(WorkflowDefinitionSchema, {
          workflowId: parsed.idempotencyKey ?? randomUUID(),
          steps: [{ name: 'main', agent: parsed.agent, message, push: parsed.push }],
          maxAttemptsPerStep: 1,
        }),
      );
      return { id: result.id, created: result.created, messageId: result.messageId ?? '' };
    },
    async startWorkflow(definition) {
      const { id, created } = await create(parse(WorkflowDefinitionSchema, definition));
      return { id, created };
    },
    get: view,
    async questions(id) {
      return (await view(id)).openQuestions;
    },
    async reply(id, answer, step) {
      const parsedAnswer = parse(ReplySchema, answer);
      const current = await view(id);
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
      await send.add('send', { ...ref, kind: 'reply' }, { jobId: jobId('reply', id, question.delegationId, reply.messageId) });
      return reply;
    },
    async cancel(id) {
      const current = await view(id);
      try {
        await journal.updateWorkflow(id, { cancelRequested: '1' });
      } catch (error) {
        if (error instanceof JournalError && error.code === 'WRONG_STATE') throw new WorkflowFinishedError(`workflow ${id} already finished (${current.state})`);
        throw error;
      }
      for (const step of current.steps) {
        for (const attempt of step.attempts) {
          if (!attempt.finished) {
            await send.add('send', { workflowId: id, delegationId: attempt.delegationId, kind: 'cancel' }, { jobId: jobId('cancel', id, attempt.delegationId) });
          }
        }
      }
      await reconcile.add('delegation', { workflowId: id, delegationId: '*' }, { jobId: jobId('reconcile', id, 'cancel', Date.now()) });
    },
    async resolve(id, action) {
      const current = await view(id);
      if (current.state !== 'NEEDS_ATTENTION') throw new WorkflowFinishedError(`workflow ${id} is ${current.state}, not waiting for a person`);
      const approvals = Object.fromEntries(
        current.steps.flatMap((step) => step.attempts).filter((attempt) => attempt.state === 'AMBIGUOUS').map((attempt) => [`retry:${attempt.delegationId}`, '1']),
      );
      const fields: Record<string, string> = action === 'retry' ? { state: 'RUNNING', attention: '', ...approvals } : { state: 'RUNNING', attention: '', cancelRequested: '1' };
      await journal.updateWorkflow(id, fields);
      await journal.scheduleCheck({ workflowId: id, delegationId: '*' }, Date.now());
      await reconcile.add('delegation', { workflowId: id, delegationId: '*' }, { jobId: jobId('reconcile', id, 'resolve', Date.now()) });
      return { state: 'RUNNING' };
    },
    async registerAgent(cardUrl) {
      const url = parse(AgentUrl, cardUrl);
      const card = await fetchAgentCard(url, { dispatcher: cardDispatcher, addressPolicy: options.addressPolicy ?? {} });
      return registry.register(url, card);
    },
    listAgents: () => registry.list(),
    async listWorkflows(listOptions = {}) {
      const limit = Math.min(Math.max(listOptions.limit ?? 50, 1), 500);
      const [cursor, ids] = await redis.sscan(journal.keys.workflows(), listOptions.cursor ?? '0', 'COUNT', limit);
      let selected = ids;
      if (listOptions.state) {
        const states = await Promise.all(ids.map((workflowId) => redis.hget(journal.keys.workflow(workflowId), 'state')));
        selected = ids.filter((_, index) => states[index] === listOptions.state);
      }
      return { ids: selected, cursor: cursor === '0' ? undefined : cursor };
    },
    async close() {
      await Promise.all([send.close(), reconcile.close(), cardDispatcher.close()]);
      if (ownsRedis) await redis.quit();
    },
  };
}

export { ProducerInputError, NotFoundError, NoOpenQuestionError, MessageInputSchema };
