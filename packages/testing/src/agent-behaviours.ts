/**
 * The script language of the demo agent: a behaviour turns one received
 * message into a list of steps, which the executor plays in order.
 */

/** Task states a step may publish (1.0 names without the `TASK_STATE_` prefix, spec §5.5). */
export type ScriptedTaskState =
  | 'WORKING'
  | 'COMPLETED'
  | 'FAILED'
  | 'REJECTED'
  | 'CANCELED'
  | 'INPUT_REQUIRED'
  | 'AUTH_REQUIRED';

/** Publishes a status update; `text` becomes an agent message on the status. */
export interface StateStep {
  state: ScriptedTaskState;
  text?: string;
}

/** Publishes an artifact update with one text part (spec §5.5 TaskArtifactUpdateEvent). */
export interface ArtifactStep {
  artifact: { artifactId: string; text: string; append?: boolean; lastChunk?: boolean; name?: string };
}

/** Waits; a cancel or a restart cuts the wait short. */
export interface DelayStep {
  delayMs: number;
}

/** Runs arbitrary code, e.g. writes to the booking service. */
export interface SideEffectStep {
  sideEffect: () => Promise<void> | void;
}

/** Replies with a Message instead of a task; only valid before any state or artifact step. */
export interface DirectMessageStep {
  directMessage: string;
  /**
   * The Message carries the request context's generated task id (`taskId: requestContext.taskId`), as executors that
   * build every reply from their context do, while the SDK stores no task for it (GetTask and SubscribeToTask on that
   * id answer TaskNotFound). Default: no task id.
   */
  withTaskId?: boolean;
}

export type Step = StateStep | ArtifactStep | DelayStep | SideEffectStep | DirectMessageStep;

/** What the executor saw, in the form a behaviour decides on. */
export interface AgentRequest {
  /** All text parts of the user message, joined with no separator. */
  text: string;
  messageId: string;
  /** Server-assigned for a new task, the client's for a follow-up. */
  taskId: string;
  contextId: string;
  /** True when the message continues an existing task (the executor got `ctx.task`). */
  isFollowUp: boolean;
  metadata?: Record<string, unknown>;
  referenceTaskIds?: string[];
}

export type Behaviour = (request: AgentRequest) => Step[];

export interface CompletesWithOptions {
  /** Split the text into this many artifact chunks (append + lastChunk). Default 1. */
  chunks?: number;
  /** Delay before each chunk. Default 0. */
  delayMs?: number;
  /** Default 'result'. */
  artifactId?: string;
}

/**
 * WORKING, then the text as one artifact (optionally in `chunks` appended
 * pieces, the last with `lastChunk`), then COMPLETED.
 */
export function completesWith(text: string, options: CompletesWithOptions = {}): Behaviour {
  return () => completionSteps(text, options);
}

/** The steps of `completesWith`, for composing inside other behaviours. */
export function completionSteps(text: string, options: CompletesWithOptions = {}): Step[] {
  const chunkCount = Math.max(1, Math.min(options.chunks ?? 1, Math.max(1, text.length)));
  const artifactId = options.artifactId ?? 'result';
  const chunkSize = Math.ceil(text.length / chunkCount);
  const steps: Step[] = [{ state: 'WORKING' }];
  for (let index = 0; index < chunkCount; index++) {
    if (options.delayMs) steps.push({ delayMs: options.delayMs });
    steps.push({
      artifact: {
        artifactId,
        text: text.slice(index * chunkSize, (index + 1) * chunkSize),
        append: index > 0,
        lastChunk: index === chunkCount - 1,
      },
    });
  }
  steps.push({ state: 'COMPLETED' });
  return steps;
}

/** WORKING, then FAILED with `reason` as the status message. */
export function fails(reason: string): Behaviour {
  return () => [{ state: 'WORKING' }, { state: 'FAILED', text: reason }];
}

/** REJECTED straight away, with `reason` as the status message. */
export function rejects(reason: string): Behaviour {
  return () => [{ state: 'REJECTED', text: reason }];
}

/**
 * First turn ends on INPUT_REQUIRED with `question`; a follow-up message on the
 * same task runs `then(answer)`, which may itself ask again.
 */
export function asksForInput(question: string, then: (answer: string, request: AgentRequest) => Step[]): Behaviour {
  return (request) => (request.isFollowUp ? then(request.text, request) : [{ state: 'INPUT_REQUIRED', text: question }]);
}

export interface RequiresAuthOptions {
  /**
   * Resume out of band (spec §7.6: the credential arrives elsewhere) after this
   * many ms in the same execution. Unset: wait for a follow-up message instead.
   */
  resumeAfterMs?: number;
  /** What happens once authorized. Default `completesWith('authorized')`. */
  then?: Behaviour;
}

/** First turn goes to AUTH_REQUIRED with `challenge`; resumes on a follow-up or after `resumeAfterMs`. */
export function requiresAuth(challenge: string, options: RequiresAuthOptions = {}): Behaviour {
  const then = options.then ?? completesWith('authorized');
  return (request) => {
    if (request.isFollowUp) return then(request);
    const steps: Step[] = [{ state: 'AUTH_REQUIRED', text: challenge }];
    if (options.resumeAfterMs !== undefined) steps.push({ delayMs: options.resumeAfterMs }, ...then(request));
    return steps;
  };
}

/** WORKING, a `ms` wait (cancelable), then completes with `text`. */
export function runsSlowly(ms: number, text = 'done'): Behaviour {
  return () => [{ state: 'WORKING' }, { delayMs: ms }, ...completionSteps(text).slice(1)];
}

/** Replies with a plain Message, no task. */
export function repliesWith(text: string): Behaviour {
  return () => [{ directMessage: text }];
}
