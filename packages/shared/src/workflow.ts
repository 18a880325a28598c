/**
 * Workflow definitions: an ordered list of steps, each naming a skill or a
 * fixed agent, the message to send, and optionally a verifier and a
 * compensation (declared before the step runs, so a step that fails halfway
 * still has its undo).
 */
import { LRUCache } from 'lru-cache';
import { z } from 'zod';
import { JsonObjectSchema, PartSchema } from '@durable-a2a/a2a/pure';
import { ID_PATTERN } from './journal/keys.ts';
import { WORKFLOW_ID_PATTERN } from './journal/tenant.ts';
import { QUESTION_EXPIRY_ACTIONS } from './journal/states.ts';

const Id = z.string().regex(ID_PATTERN, 'letters, digits, ".", "_" or "-", 1 to 128 characters');
const HttpUrl = z.url({ protocol: /^https?$/ });

/** A notification receiver: the http(s) URL the signed events are POSTed to. */
export const NotifyTargetSchema = z.object({ url: HttpUrl });
export type NotifyTarget = z.infer<typeof NotifyTargetSchema>;

/** A message to send: plain text or parts, with optional metadata. */
export const MessageInputSchema = z.union([
  z.object({ text: z.string().min(1), metadata: JsonObjectSchema.optional() }),
  z.object({ parts: z.array(PartSchema).min(1), metadata: JsonObjectSchema.optional() }),
]);
export type MessageInput = z.infer<typeof MessageInputSchema>;

/** Where a delegation goes: a fixed agent (its Agent Card URL or base URL) or any registered agent with a skill. */
export const TargetSchema = z.union([
  z.object({ agent: HttpUrl, skill: z.string().min(1).optional() }),
  z.object({ skill: z.string().min(1), tags: z.array(z.string()).optional() }),
]);

/** A verifier reference: a verifier registered by name in the workers, with parameters. */
export const VerifierRefSchema = z.object({ name: z.string().min(1), params: z.record(z.string(), z.unknown()).default({}) });
export type VerifierRef = z.infer<typeof VerifierRefSchema>;

/** A compensation: another A2A delegation, or a handler registered in the workers. */
export const CompensationSchema = z.union([
  z.intersection(TargetSchema, z.object({ message: MessageInputSchema, verifier: VerifierRefSchema.optional() })),
  z.object({ handler: z.string().min(1), params: z.record(z.string(), z.unknown()).default({}) }),
]);
export type Compensation = z.infer<typeof CompensationSchema>;

/** True when `text` holds nothing but whitespace (an answer or a default answer of that kind says nothing). */
export const isBlankText = (text: string): boolean => text.trim() === '';


/**
 * The life of a question an attempt of the step asks (INPUT_REQUIRED / AUTH_REQUIRED), counted from when it was
 * asked (journaled). Without it (the default) a question waits until the attempt deadline.
 *   - `expiresAfterMs` (ms, with `onExpiry`): the question expires, journaled with what was done:
 *     `cancel`: the workflow is canceled (CancelTask to the agent, compensation as for a cancel);
 *     `fail`: the attempt ends FAILED `QUESTION_EXPIRED` (the workflow decides as for a failure: re-delegation
 *     within `maxAttemptsPerStep`); `answer`: `defaultAnswer` (required, not blank) is sent as the reply.
 *   - `remindEveryMs` (ms): a reminder (a log line and the `durable_a2a_question_reminders_total` counter) every
 *     interval while the question is open, at most 10 per question (the workers' `MAX_QUESTION_REMINDERS`), none once
 *     it expired, none for a step of a stopping workflow (`isStepStopped`: its question is closed).
 */
const questionPolicyFields = {
  expiresAfterMs: z.number().int().positive().optional(),
  onExpiry: z.enum(QUESTION_EXPIRY_ACTIONS).optional(),
  defaultAnswer: z.string().min(1).max(4_096).refine((text) => !isBlankText(text), 'must not be blank').optional(),
  remindEveryMs: z.number().int().positive().optional(),
};

/** The rules across a question policy's fields (one issue per broken rule). */
function checkQuestionPolicy(policy: { expiresAfterMs?: number; onExpiry?: string; defaultAnswer?: string; remindEveryMs?: number }, context: z.RefinementCtx): void {
  if ((policy.expiresAfterMs === undefined) !== (policy.onExpiry === undefined)) context.addIssue({ code: 'custom', message: 'give expiresAfterMs and onExpiry together', path: ['onExpiry'] });
  if (policy.onExpiry === 'answer' && policy.defaultAnswer === undefined) context.addIssue({ code: 'custom', message: "onExpiry 'answer' needs a defaultAnswer", path: ['defaultAnswer'] });
  if (policy.expiresAfterMs === undefined && policy.remindEveryMs === undefined) context.addIssue({ code: 'custom', message: 'give expiresAfterMs (with onExpiry) or remindEveryMs', path: ['expiresAfterMs'] });
}

export const QuestionPolicySchema = z.object(questionPolicyFields).superRefine(checkQuestionPolicy);
/** `QuestionPolicySchema` with unknown fields refused (the HTTP API's and `startWorkflow`'s edge check). */
export const StrictQuestionPolicySchema = z.strictObject(questionPolicyFields).superRefine(checkQuestionPolicy);
export type QuestionPolicy = z.infer<typeof QuestionPolicySchema>;

export const StepSchema = z.intersection(
  TargetSchema,
  z.object({
    name: Id,
    message: MessageInputSchema,
    /**
     * Steps that must complete first (earlier steps only, so the graph stays acyclic).
     * Default: the previous step (a plain sequence). `[]` starts the step at once.
     */
    after: z.array(Id).optional(),
    /** Register a push notification config for this step's task (the reconciler stays the backstop). */
    push: z.boolean().optional(),
    verifier: VerifierRefSchema.optional(),
    compensation: CompensationSchema.optional(),
    /**
     * A read-only step (a lookup, a quote) has no side effect to verify or undo, so when a send
     * cannot be proven either way (AMBIGUOUS) it is simply run again as a new attempt
     * instead of waiting for a person. Incompatible with `verifier` and `compensation`.
     */
    readOnly: z.boolean().optional(),
    /** Overall deadline of each attempt of this step in ms (default: the workers' `attemptDeadlineMs`, 24 h). */
    attemptDeadlineMs: z.number().int().positive().optional(),
    /**
     * How long (ms) an attempt of this step waits for an agent that cannot be reached (connection refused, DNS
     * failure, its Agent Card unavailable: nothing was sent) before it ends FAILED `AGENT_UNREACHABLE` and the step
     * goes to another agent with its skill (within `maxAttemptsPerStep`). Counted from the first failed try.
     * Default: the attempt deadline (`attemptDeadlineMs`).
     */
    unreachableForMs: z.number().int().positive().optional(),
    /** The life of a question an attempt asks (`QuestionPolicySchema`); default: it waits until the attempt deadline. */
    question: QuestionPolicySchema.optional(),
  }),
).refine((step) => !step.readOnly || (!step.verifier && !step.compensation), {
  message: 'a readOnly step has no verifier and no compensation',
  path: ['readOnly'],
});
export type Step = z.infer<typeof StepSchema>;

/** `startWorkflow` input. `maxAttemptsPerStep` counts attempts across all agents (default 3). */
export const WorkflowDefinitionSchema = z
  .object({
    /** A stored workflow id: a tenant's carries its `<tenant>~` (tenant.ts); callers choose the part after it. */
    workflowId: z.string().regex(WORKFLOW_ID_PATTERN, 'letters, digits, ".", "_" or "-", 1 to 128 characters'),
    steps: z.array(StepSchema).min(1).max(100),
    maxAttemptsPerStep: z.number().int().min(1).max(20).default(3),
    metadata: JsonObjectSchema.optional(),
    /** Priority of every send of this workflow, 1 (lowest) to 10 (highest); default 5 (`send-priority.ts`). Kept by re-sends and re-delegations. */
    priority: z.number().int().min(1).max(10).optional(),
    /**
     * Where this workflow's notifications go (docs/people.md "Notifications"): replaces the fleet-wide `DA2A_NOTIFY_URL`
     * for this workflow. The URL passes the same address policy as agents.
     */
    notify: NotifyTargetSchema.optional(),
  })
  .refine((definition) => new Set(definition.steps.map((step) => step.name)).size === definition.steps.length, {
    message: 'step names must be unique',
    path: ['steps'],
  })
  .refine(
    (definition) =>
      definition.steps.every((step, index) => (step.after ?? []).every((name) => definition.steps.slice(0, index).some((earlier) => earlier.name === name))),
    { message: '`after` may only name earlier steps', path: ['steps'] },
  );

/** The steps a step waits for: `after`, or the previous step. */
export function dependenciesOf(steps: readonly { name: string; after?: string[] }[], index: number): string[] {
  const step = steps[index]!;
  if (step.after) return step.after;
  return index > 0 ? [steps[index - 1]!.name] : [];
}
export type WorkflowDefinition = z.output<typeof WorkflowDefinitionSchema>;

export { WORKFLOW_STATES, QUESTION_EXPIRY_ACTIONS, type WorkflowState, type QuestionExpiryAction } from './journal/states.ts';

/** Byte budget of the parsed definitions kept in-process (B32): the text as key plus its parse, about three times the text. */
const DEFINITION_CACHE_BYTES = 32 * 1024 * 1024;
const LONGEST_KEPT_DEFINITION = 16_384;
const parsedDefinitions = new LRUCache<string, WorkflowDefinition>({ maxSize: DEFINITION_CACHE_BYTES, sizeCalculation: (_definition, text) => Math.max(1, text.length * 3) });

/**
 * Parses a journaled definition (its JSON text) with `WorkflowDefinitionSchema`. A definition never
 * changes once its workflow exists, so the parse of a text is kept in-process (texts of at most 16,384
 * characters within a 32 MiB budget, the least recently used out first; field case B32) and handed out again: callers read it,
 * never change it. Throws like `WorkflowDefinitionSchema.parse(JSON.parse(text))`; a failure is not kept.
 */
export function parseDefinitionText(text: string): WorkflowDefinition {
  const kept = parsedDefinitions.get(text);
  if (kept) return kept;
  const definition = WorkflowDefinitionSchema.parse(JSON.parse(text));
  if (text.length <= LONGEST_KEPT_DEFINITION) {
    parsedDefinitions.set(text, definition);
  }
  return definition;
}

/**
 * Keeps `definition` as the parse of `text`, so that `parseDefinitionText(text)` in this process hands it out without
 * parsing: for a caller that has just validated `definition` with `WorkflowDefinitionSchema` and journals
 * `text = JSON.stringify(definition)` (the producer, whose `waitFor` reads the definition back from the journal).
 * The schema has defaults and refinements but no transforms, so its parse of that text equals `definition`, unless a
 * member of it is `undefined` (the text leaves it out, the parse has no such key) or `-0` (the text says `0`): such a
 * definition is not kept. The
 * caller hands the object over: it is read, never changed, from then on. Texts over 16,384 characters are not kept.
 */
export function keepParsedDefinition(text: string, definition: WorkflowDefinition): void {
  if (text.length > LONGEST_KEPT_DEFINITION || parsedDefinitions.has(text) || holdsWhatJsonDrops(definition)) return;
  parsedDefinitions.set(text, definition);
}

/**
 * True when `value` (JSON-like) holds, at any depth, what its JSON text does not give back: an object member or array
 * item that is `undefined` (left out), or `-0` (written `0`).
 */
function holdsWhatJsonDrops(value: unknown): boolean {
  if (value === undefined || Object.is(value, -0)) return true;
  if (!value || typeof value !== 'object') return false;
  return (Array.isArray(value) ? value : Object.values(value)).some(holdsWhatJsonDrops);
}

/**
 * The verifier an attempt of `kind` declares in its step: the step's own (`step`), or its compensation's
 * (`compensation`, only a delegation compensation can declare one). The one answer to "does this attempt declare a
 * verifier" for the send path's check, the settle and the undo chain.
 */
export function declaredVerifier(step: Step, kind: 'step' | 'compensation'): VerifierRef | undefined {
  if (kind === 'step') return step.verifier;
  return step.compensation && 'verifier' in step.compensation ? step.compensation.verifier : undefined;
}
