/** Moved to @durable-a2a/testing; re-exported so existing imports keep working. */
export {
  asksForInput,
  completesWith,
  completionSteps,
  fails,
  rejects,
  repliesWith,
  requiresAuth,
  runsSlowly,
} from '@durable-a2a/testing';
export type {
  AgentRequest,
  ArtifactStep,
  Behaviour,
  CompletesWithOptions,
  DelayStep,
  DirectMessageStep,
  RequiresAuthOptions,
  ScriptedTaskState,
  SideEffectStep,
  StateStep,
  Step,
} from '@durable-a2a/testing';
