/**
 * The grammar of agent deviations (docs/conformance-kit.md): a behaviour is an
 * honest A2A 1.0 JSON-RPC agent (one task per message, our context honoured,
 * ListTasks that finds our message) plus a list of deviations, at most one of
 * each kind. Every deviation is data, so fast-check can generate, print and
 * shrink it; test/fuzz/agent.ts turns a behaviour into wire bytes.
 */

/** JSON-RPC methods of the 1.0 binding that the fuzz agent serves (spec §9). */
export const METHODS = ['SendMessage', 'SendStreamingMessage', 'GetTask', 'ListTasks', 'SubscribeToTask', 'CancelTask'] as const;
export type Method = (typeof METHODS)[number];

/** Where a hang or an error can be placed: a JSON-RPC method or the Agent Card fetch. */
export type Site = Method | 'AgentCard';

/** How an agent spells a task state on the wire (spec §5.5 TaskState; 0.3 lower/kebab case; forms seen in the wild). */
export const STATE_SPELLINGS = ['proto', 'v03', 'upperSnake', 'lowerSnake', 'pascal', 'protoLower'] as const;
export type StateSpelling = (typeof STATE_SPELLINGS)[number];

export type Deviation =
  /** The answer's JSON-RPC id is not our request's; `misrouted` answers also carry another client's task. */
  | { kind: 'rpcId'; method: 'SendMessage' | 'GetTask' | 'ListTasks'; id: 'missing' | 'null' | 'other' | 'stringified'; body: 'ours' | 'misrouted' }
  /** Another client's task (other id, other context, not our message) where ours is expected. */
  | { kind: 'foreignTask'; where: 'send' | 'stream' | 'getTask' | 'list' }
  /** Task states spelled in these styles, in turn (one style = every value alike). */
  | { kind: 'stateSpelling'; styles: StateSpelling[] }
  /** The agent's clock: skewed by `skewMs`, zone-less, missing, or the terminal stamped before WORKING. */
  | { kind: 'clock'; skewMs: number; format: 'utc' | 'zoneless' | 'offset' | 'missing'; terminalBeforeWorking: boolean }
  /** Operations on a subscription's event list (snapshot included), applied in order; indexes wrap. */
  | { kind: 'eventOrder'; ops: EventOp[] }
  /** The first `streams` subscriptions end (FIN) after `afterEvents` events, optionally inside the next one. */
  | { kind: 'earlyFin'; afterEvents: number; midEvent: boolean; streams: number }
  /** Subscriptions send only SSE comments (`:\n\n`) every `intervalMs`, optionally after the snapshot, and never end. */
  | { kind: 'keepAliveOnly'; afterSnapshot: boolean; intervalMs: number }
  /**
   * The first `times` calls of `method` answer a JSON-RPC error: code of either version, data shape, HTTP status.
   * On a send, a refusal code (`REFUSAL_CODES`) creates no task; any other code creates it first when `created`
   * (the agent failed after accepting the message), else not.
   */
  | { kind: 'errorCode'; method: Method; code: number; data: 'errorInfo' | 'object' | 'none'; httpStatus: 200 | 400 | 404 | 500; times: number; created: boolean }
  /** The SendMessage result: wrapped `{task}` (1.0) or a bare Task (0.3 shape), with or without `kind`, with extra fields. */
  | { kind: 'resultShape'; send: 'wrapped' | 'bare' | 'bareWithKind' | 'wrappedWithKind' | 'extraFields' }
  /** Stream events: status/artifact updates, whole-Task snapshots only (V4), or 0.3 `kind`-tagged objects. */
  | { kind: 'streamShape'; events: 'wholeTasks' | 'kindTagged' }
  /** A 0x1E byte before the JSON in `data:` lines (RFC 7464 framing leaking into SSE, V4). */
  | { kind: 'recordSeparator'; scope: 'all' | 'first' }
  /**
   * A value over the documented limits: an Agent Card of `amount` bytes; or an artifact of `amount` bytes,
   * parts or nesting levels, in one stream event only (`streamEvent`) or everywhere our task is shown (`artifact`).
   */
  | { kind: 'oversized'; where: 'card' | 'artifact' | 'streamEvent'; shape: 'bytes' | 'parts' | 'depth'; amount: number }
  /** The first `times` calls at `site` never answer (before headers) or stop after the headers (a hung send has created the task). */
  | { kind: 'hang'; site: Site; phase: 'beforeHeaders' | 'afterHeaders'; times: number }
  /**
   * Every answer at `site` carries envelope id `null` or none, its content ours (our messageId in history, our
   * context: ownership proven by content); or (`other`) another request's id on a decoy task that claims our
   * context and messageId under another task id (the envelope disproves it: never adopted).
   */
  | { kind: 'envelopeId'; site: 'SendMessage' | 'GetTask' | 'SendStreamingMessage' | 'SubscribeToTask'; id: 'null' | 'missing' | 'other' }
  /** Streams at `site` open with a status update (no task snapshot, no history), its context ours or omitted; frames carry our request id. */
  | { kind: 'statusFirst'; site: 'SendStreamingMessage' | 'SubscribeToTask'; context: 'ours' | 'omitted' }
  /**
   * ListTasks answers summaries (no artifacts; `honoured`: unless `includeArtifacts` is true), and the first send's
   * answer is lost after the task was created (never answered, or cut after the headers), so only a search finds it.
   */
  | { kind: 'listSummary'; lostSend: 'beforeHeaders' | 'afterHeaders'; includeArtifacts: 'ignored' | 'honoured' }
  /** `progress` WORKING statuses carry a message, then (`bareLast`: one more WORKING and) the final status carries none. */
  | { kind: 'statusMessages'; progress: number; bareLast: boolean }
  /** `status.message` is a bare string (the 0.3 schema wants a Message) on the final status or on every status. */
  | { kind: 'bareMessage'; on: 'final' | 'every'; text: 'plain' | 'unicode' | 'long' }
  /**
   * A COMPLETED task carries `artifacts` extra artifacts whose parts are empty text and whose `bytes` (in total) sit in
   * artifact metadata, name, description or part metadata: every stored byte counts against the artifact budget.
   */
  | { kind: 'artifactMetadata'; where: 'metadata' | 'name' | 'description' | 'partMetadata'; artifacts: number; bytes: number }
  /**
   * An answer over a limit (`shape`, `amount` as in `oversized`): the first send's answer (`send`, in any state); every
   * stream with reads showing the task without artifacts (`follow`); or streams and reads alike (`followAndRead`).
   */
  | { kind: 'overLimitAnswer'; path: 'send' | 'follow' | 'followAndRead'; shape: 'bytes' | 'parts' | 'depth'; amount: number }
  /** From WORKING on the task asks AUTH_REQUIRED again every `intervalMs` (a fresh timestamp and sign-in text), `times` times, then ends. */
  | { kind: 'authChallenges'; times: number; intervalMs: number }
  /** The task works `workMs`, WORKING again every `updateEveryMs`; every stream is cut after `cutAfterUpdates` delivered updates. */
  | { kind: 'recycling'; workMs: number; updateEveryMs: number; cutAfterUpdates: number };

export type DeviationKind = Deviation['kind'];

export type EventOp = { op: 'duplicate' | 'drop'; index: number } | { op: 'swap'; index: number; with: number };

/** Every deviation kind, in documentation order. */
export const DEVIATION_KINDS = [
  'rpcId',
  'foreignTask',
  'stateSpelling',
  'clock',
  'eventOrder',
  'earlyFin',
  'keepAliveOnly',
  'errorCode',
  'resultShape',
  'streamShape',
  'recordSeparator',
  'oversized',
  'hang',
  'envelopeId',
  'statusFirst',
  'listSummary',
  'statusMessages',
  'bareMessage',
  'artifactMetadata',
  'overLimitAnswer',
  'authChallenges',
  'recycling',
] as const satisfies readonly DeviationKind[];

/** The honest part of a behaviour: how the task ends and how long it works. */
export interface Story {
  /** The agent's final state for our task. */
  final: 'COMPLETED' | 'FAILED' | 'REJECTED';
  /** Milliseconds from the send to the terminal state. */
  workMs: number;
  /** Artifact chunks streamed before COMPLETED (0 = the answer is only in the final status message, V3). */
  chunks: number;
  /** The Agent Card declares `capabilities.streaming` (a client may then send with SendStreamingMessage, V2). Default false. */
  streaming?: boolean;
}

/** One generated agent behaviour. */
export interface Behaviour {
  story: Story;
  deviations: Deviation[];
}

/** The deviation of one kind in a behaviour, typed by kind. */
export function deviationOf<K extends DeviationKind>(behaviour: Behaviour, kind: K): Extract<Deviation, { kind: K }> | undefined {
  return behaviour.deviations.find((deviation): deviation is Extract<Deviation, { kind: K }> => deviation.kind === kind);
}

/** Parses a comma-separated kind list (FUZZ_KINDS); throws on an unknown name. Empty or undefined = every kind. */
export function parseKinds(text: string | undefined): DeviationKind[] {
  if (!text?.trim()) return [...DEVIATION_KINDS];
  const names = text.split(',').map((name) => name.trim()).filter(Boolean);
  for (const name of names) {
    if (!(DEVIATION_KINDS as readonly string[]).includes(name)) throw new Error(`unknown deviation kind "${name}"; known: ${DEVIATION_KINDS.join(', ')}`);
  }
  return names as DeviationKind[];
}

/**
 * Error codes with which an agent refuses a request before acting on it (JSON-RPC 2.0 §5.1 request errors;
 * the A2A errors of request validation, spec §3.3.2, §3.6, §5.4): an honest agent that answers a send with
 * one has created no task. Other codes (-32603, -32000..-32099, -32006, -32002) may come after it did.
 */
export const REFUSAL_CODES: readonly number[] = [-32700, -32600, -32601, -32602, -32001, -32003, -32004, -32005, -32008, -32009];

/** True when an errorCode deviation on a send leaves the agent with a task for our message. */
export const errorCreatesTask = (deviation: Extract<Deviation, { kind: 'errorCode' }>): boolean => deviation.created && !REFUSAL_CODES.includes(deviation.code);

/** Calls a hang or an error lasts when it lasts for the whole run. */
export const ALWAYS = 1_000_000;

/** The fuzz fleet's `artifactBytesPerDelegation` (FUZZ_TIMINGS): small, so metadata over it costs little to send. */
export const ARTIFACT_BUDGET_BYTES = 2 * (1 << 20);

/** The card declares streaming: the story says so, or a kind that needs a streaming send. */
export const declaresStreaming = (behaviour: Behaviour): boolean =>
  behaviour.story.streaming === true || deviationOf(behaviour, 'statusFirst')?.site === 'SendStreamingMessage' || deviationOf(behaviour, 'envelopeId')?.site === 'SendStreamingMessage';

/**
 * True when a client that follows the rules can still learn the agent's real outcome despite this
 * deviation: the value is readable in some accepted form, or another method tells the truth
 * (ListTasks finds our message, GetTask answers after a broken stream, a transient failure passes).
 * False for oversized values (the attempt must end with a reason) and for failures that last the whole run.
 */
export function isRecoverable(deviation: Deviation): boolean {
  switch (deviation.kind) {
    case 'oversized':
    case 'overLimitAnswer':
      return false;
    case 'artifactMetadata':
      return deviation.bytes <= ARTIFACT_BUDGET_BYTES / 2;
    case 'authChallenges':
      return deviation.times < ALWAYS;
    case 'hang':
    case 'errorCode':
      return deviation.times < ALWAYS;
    default:
      return true;
  }
}

// ---------------------------------------------------------------------------
// Spellings and clocks: how a deviating agent writes a value.

export type TaskStateName = 'SUBMITTED' | 'WORKING' | 'COMPLETED' | 'FAILED' | 'CANCELED' | 'REJECTED' | 'INPUT_REQUIRED' | 'AUTH_REQUIRED';

/** Writes `state` in `style`: proto `TASK_STATE_INPUT_REQUIRED`, v03 `input-required`, upperSnake `INPUT_REQUIRED`, … */
export function spellState(state: TaskStateName, style: StateSpelling): string {
  const words = state.toLowerCase().split('_');
  switch (style) {
    case 'proto':
      return `TASK_STATE_${state}`;
    case 'v03':
      return words.join('-');
    case 'upperSnake':
      return state;
    case 'lowerSnake':
      return words.join('_');
    case 'pascal':
      return words.map((word) => word[0]!.toUpperCase() + word.slice(1)).join('');
    case 'protoLower':
      return `task_state_${words.join('_')}`;
  }
}

/** Writes an instant (our clock, ms) as the agent would: skewed, in its format; undefined = no timestamp. */
export function stamp(instantMs: number, clock: Extract<Deviation, { kind: 'clock' }> | undefined): string | undefined {
  if (!clock) return new Date(instantMs).toISOString();
  const iso = new Date(instantMs + clock.skewMs).toISOString();
  switch (clock.format) {
    case 'utc':
      return iso;
    case 'zoneless':
      return iso.slice(0, -1);
    case 'offset': {
      // The same instant written in UTC+02:00.
      const shifted = new Date(instantMs + clock.skewMs + 2 * 3_600_000).toISOString();
      return `${shifted.slice(0, -1)}+02:00`;
    }
    case 'missing':
      return undefined;
  }
}

/** The agent's own reading of a timestamp it wrote (for its ListTasks filter); NaN when there is none. */
export function readStamp(text: string | undefined): number {
  if (!text) return Number.NaN;
  return Date.parse(/[zZ]|[+-]\d\d:\d\d$/.test(text) ? text : `${text}Z`);
}
