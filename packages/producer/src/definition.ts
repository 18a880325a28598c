/**
 * The edge check of workflow definitions and delegations (field case RT1):
 * everything is checked before anything is written.
 *
 * - Unknown fields are refused at every level (a typo such as
 *   `idempotency_key` must not silently lose idempotency).
 * - Step names are unique, use letters, digits, `_` and `-` only (no `.`,
 *   `|`, `:` — the journal builds delegation ids `<step>.<attempt>` and
 *   compensation ids from them, so those characters could collide) and do not
 *   start with a reserved prefix (`undo`, `compensation`, `verify`).
 * - `after` names existing, earlier steps, each at most once and never the
 *   step itself (so the dependency graph has no cycle).
 * - At most MAX_WORKFLOW_STEPS steps.
 * - A step (and a compensation) names an `agent` or a `skill`, not both.
 * - Not checked here: verifier names (registered in the workers, which refuse an attempt whose verifier
 *   they do not have before sending anything: workers/src/delegation/verifier-check.ts) and skills
 *   (agents may be registered after the workflow starts; a step without one waits, then fails with the reason).
 *
 * The strict schemas here are the request schemas of the HTTP API (and its
 * OpenAPI document); the shared WorkflowDefinitionSchema then gives the
 * canonical form with defaults.
 */
import { z } from 'zod';
import { JsonObjectSchema, PartSchema } from '@durable-a2a/a2a';
import { ID_PATTERN, SendPrioritySchema, StrictQuestionPolicySchema } from '@durable-a2a/shared';

/** Documented step limit of one workflow. */
export const MAX_WORKFLOW_STEPS = 100;
/** Step names: 1 to 64 of letters, digits, `_`, `-`. */
export const STEP_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
/** Prefixes reserved for ids the workers derive from step names (compensations, verifications). */
export const RESERVED_STEP_PREFIXES = ['undo', 'compensation', 'verify'] as const;

const Id = z.string().regex(ID_PATTERN, 'letters, digits, ".", "_" or "-", 1 to 128 characters');
const HttpUrl = z.url({ protocol: /^https?$/, error: 'an http(s) URL' });
const Metadata = JsonObjectSchema;
const StepName = z
  .string()
  .regex(STEP_NAME_PATTERN, 'letters, digits, "_" or "-", 1 to 64 characters (".", "|" and ":" are reserved)')
  .refine((name) => !RESERVED_STEP_PREFIXES.some((prefix) => name.toLowerCase().startsWith(prefix)), {
    message: `must not start with a reserved prefix (${RESERVED_STEP_PREFIXES.join(', ')})`,
  });

/** A message: exactly one of `text` or `parts`, optional metadata. */
export const StrictMessageSchema = z
  .strictObject({ text: z.string().min(1, 'must not be empty').optional(), parts: z.array(PartSchema).min(1, 'must not be empty').optional(), metadata: Metadata.optional() })
  .refine((message) => (message.text === undefined) !== (message.parts === undefined), { message: 'give exactly one of text or parts', path: ['text'] });

const StrictVerifierSchema = z.strictObject({ name: z.string().min(1), params: Metadata.optional() });

const hasTarget = (target: { agent?: string; skill?: string }) => target.agent !== undefined || target.skill !== undefined;
const targetRefinement = [hasTarget, { message: 'give an agent or a skill', path: ['agent'] }] as [typeof hasTarget, { message: string; path: string[] }];
/** Both would be ambiguous: the fixed agent always went first and the skill only showed on a re-delegation. */
const oneTarget = (target: { agent?: string; skill?: string }) => target.agent === undefined || target.skill === undefined;
const oneTargetRefinement = [oneTarget, { message: 'give an agent or a skill, not both', path: ['skill'] }] as [typeof oneTarget, { message: string; path: string[] }];

const StrictCompensationSchema = z.union([
  z.strictObject({ handler: z.string().min(1), params: Metadata.optional() }),
  z
    .strictObject({ agent: HttpUrl.optional(), skill: z.string().min(1).optional(), tags: z.array(z.string()).optional(), message: StrictMessageSchema, verifier: StrictVerifierSchema.optional() })
    .refine(...targetRefinement)
    .refine(...oneTargetRefinement),
]);

export const StrictStepSchema = z
  .strictObject({
    name: StepName,
    agent: HttpUrl.optional(),
    skill: z.string().min(1).optional(),
    tags: z.array(z.string()).optional(),
    message: StrictMessageSchema,
    after: z.array(StepName).optional(),
    push: z.boolean().optional(),
    verifier: StrictVerifierSchema.optional(),
    compensation: StrictCompensationSchema.optional(),
    readOnly: z.boolean().optional(),
    /** Overall deadline of each attempt of this step in ms (default: the workers' `attemptDeadlineMs`, 24 h). */
    attemptDeadlineMs: z.number().int().positive().optional(),
    /** How long (ms) an attempt waits for an agent that cannot be reached before it ends FAILED `AGENT_UNREACHABLE` (default: the attempt deadline). */
    unreachableForMs: z.number().int().positive().optional(),
    /** The life of a question an attempt asks: expiry and what is done then, reminders (default: it waits until the attempt deadline). */
    question: StrictQuestionPolicySchema.optional(),
  })
  .refine(...targetRefinement)
  .refine(...oneTargetRefinement)
  .refine((step) => !step.readOnly || (!step.verifier && !step.compensation), { message: 'a readOnly step has no verifier and no compensation', path: ['readOnly'] });

/** Adds one issue per problem of the step graph: duplicate names, unknown / later / repeated / self `after`. */
function checkStepGraph(steps: readonly { name: string; after?: string[] }[], context: z.RefinementCtx): void {
  const seen = new Map<string, number>();
  steps.forEach((step, index) => {
    const earlier = seen.get(step.name);
    if (earlier !== undefined) context.addIssue({ code: 'custom', path: ['steps', index, 'name'], message: `duplicate step name ${step.name} (also steps.${earlier}.name)` });
    seen.set(step.name, earlier ?? index);
    const named = new Set<string>();
    (step.after ?? []).forEach((dependency, position) => {
      const path = ['steps', index, 'after', position];
      const at = seen.get(dependency);
      if (dependency === step.name) context.addIssue({ code: 'custom', path, message: `a step cannot wait for itself (${dependency})` });
      else if (named.has(dependency)) context.addIssue({ code: 'custom', path, message: `${dependency} is named twice` });
      else if (at === undefined || at >= index) {
        const later = steps.some((other) => other.name === dependency);
        context.addIssue({ code: 'custom', path, message: later ? `${dependency} comes later: \`after\` names earlier steps only (no cycles)` : `no step named ${dependency}` });
      }
      named.add(dependency);
    });
  });
}

/** Where a workflow's notifications go (docs/people.md "Notifications"). */
export const StrictNotifyTargetSchema = z.strictObject({ url: HttpUrl });

/** `POST /v1/workflows` body and `startWorkflow` input, checked fully. */
export const StrictWorkflowDefinitionSchema = z
  .strictObject({
    workflowId: Id,
    steps: z.array(StrictStepSchema).min(1, 'at least one step').max(MAX_WORKFLOW_STEPS, `at most ${MAX_WORKFLOW_STEPS} steps`),
    maxAttemptsPerStep: z.number().int().min(1).max(20).optional(),
    metadata: Metadata.optional(),
    notify: StrictNotifyTargetSchema.optional(),
    /** Priority of the workflow's sends, 1 (lowest) to 10 (highest); default 5. */
    priority: SendPrioritySchema.optional(),
  })
  .superRefine((definition, context) => checkStepGraph(definition.steps, context));
