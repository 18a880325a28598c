/**
 * The words of a question the agent put in its message(s) of the task instead of the status message (question35): an
 * INPUT_REQUIRED / AUTH_REQUIRED whose status carries no message, after the agent sent its question as a Message on the
 * task's stream or kept it in the Task's `history`. The rule, for every channel:
 * - the status message, when the status has one, is the question (nothing here applies);
 * - else the agent's messages that came after the last status the row recorded: on a stream, the Message events since
 *   the stream's last status event (`StreamQuestionWords`); in a Task's history, the trailing agent messages after our
 *   last message and after the last status message the row recorded (`historyQuestionWords`);
 * - a message sent before a later status (a WORKING progress message, field case A36) is never the question: every
 *   unfinished, unparked status the row applies records the last agent message it follows (`wordsCut`: on a stream the
 *   last Message event since the stream's last status, `streamWordsCut`; in a Task the last agent message of its
 *   history, `historyWordsCut`) as the row's `questionWordsAfter`, and a later read cuts after it.
 * Only messages of our task are taken: role agent, taskId ours (or none, in a Task's own history), contextId ours or
 * none. The words are bounded as a status message is (`statusMessageBytes`, status.ts).
 */
import type { Message, StreamResponse, Task, TaskStatusUpdateEvent } from '@durable-a2a/a2a/pure';
import { isFinished, journalStateOf } from './states.ts';

/** The status updates `StreamQuestionWords` gave the agent's words as their message (`wordsFilled`). */
const filled = new WeakSet<TaskStatusUpdateEvent>();

/**
 * Whether `event` is a parked status update whose message are the agent's words (`StreamQuestionWords`), not its own
 * status message: its question is keyed by the status alone (`StatusChange.questionWords`).
 */
export const wordsFilled = (event: TaskStatusUpdateEvent): boolean => filled.has(event);

/**
 * The stream's cut of each status (update or Task) `StreamQuestionWords.withWords` passed on: the messageId of the last
 * Message event of our task it saw since the stream's last status (`streamWordsCut`).
 */
const streamCuts = new WeakMap<object, string>();

/**
 * The messageId of the last Message event of our task a stream showed before `status` (a status update's event or a
 * Task, as `StreamQuestionWords.withWords` passed it) and after the stream's status before it; undefined: none, or not
 * from a stream.
 */
export const streamWordsCut = (status: TaskStatusUpdateEvent | Task): string | undefined => streamCuts.get(status);

/**
 * The messageId of the last agent message in `task`'s history (undefined: none): what the Task's status was read
 * with, so a message the row read before a later status (A36) is cut off a later read's words (`wordsCut`).
 */
export function historyWordsCut(task: Task): string | undefined {
  return task.history?.findLast((message) => message.role === 'ROLE_AGENT' && message.messageId !== '')?.messageId;
}

/**
 * The cut an agent's status of `state` records (`StatusChange.wordsCut`): `cut` for an unfinished, unparked state (a
 * WORKING), else undefined (a parked status's words are the messages after the cut before it; a finished row asks
 * nothing more).
 */
export function wordsCutFor(state: string, cut: string | undefined): string | undefined {
  if (cut === undefined || parked(state)) return undefined;
  const journal = journalStateOf(state as Parameters<typeof journalStateOf>[0]);
  return isFinished(journal) ? undefined : cut;
}

const UTF8 = new TextEncoder();

/** How many ids a row's cut keeps (`questionWordsAfter`, applyStatus-5.lua CUTS_KEPT): the newest. */
export const QUESTION_CUTS_KEPT = 4;

/**
 * The ids of a row's `questionWordsAfter` (applyStatus-5.lua): a history's question words come after the latest of
 * them. '-' or undefined: none; else the JSON list, newest first, the script writes. One id as it is (the shape older
 * releases wrote for a single id) is still read, as a list of that one: rows journaled before stay readable.
 */
export function cutsOf(questionWordsAfter: string | undefined): string[] {
  if (!questionWordsAfter || questionWordsAfter === '-') return [];
  if (questionWordsAfter.startsWith('[')) {
    try {
      const list: unknown = JSON.parse(questionWordsAfter);
      if (Array.isArray(list)) return list.filter((id): id is string => typeof id === 'string');
    } catch {
      // One id beginning with '[' written as it is by an older release: itself (below).
    }
  }
  // One id as it is: a row written by an older release.
  return [questionWordsAfter];
}

/** The fields of a row a history's question words are cut on (`wordsBasisOf`). */
export interface WordsBasis {
  state: string;
  statusMessage?: Message;
  questionWordsAfter?: string;
  question?: Message;
}

/**
 * The cut `row` gives a history's question words, as one string (`StatusChange.questionWordsOn`): its state, its status
 * message's id, its `questionWordsAfter` and whether it holds a question, each as `<UTF-8 bytes>:<text>`. applyStatus-5.lua
 * builds the same string from the row as stored (AT_WORDS_ON) and applies the words only when the two are equal.
 */
export function wordsBasisOf(row: WordsBasis): string {
  return [row.state, row.statusMessage?.messageId ?? '', row.questionWordsAfter ?? '', row.question ? '1' : '']
    .map((value) => `${UTF8.encode(value).length}:${value}`)
    .join('');
}

/** `event` with `words` as its status message, marked `wordsFilled`. */
function withMessage(event: TaskStatusUpdateEvent, words: Message): { statusUpdate: TaskStatusUpdateEvent } {
  const statusUpdate = { ...event, status: { ...event.status, message: words } };
  filled.add(statusUpdate);
  return { statusUpdate };
}

/** At most this many of the agent's messages make one question (the latest ones); more is an agent talking, not asking. */
export const QUESTION_WORDS_MESSAGES = 8;

/** The task a message must belong to: the row's task id and context id (undefined: not known yet). */
export interface QuestionOwner {
  taskId?: string;
  contextId?: string;
}

const parked = (state: string): boolean => {
  const journal = journalStateOf(state as Parameters<typeof journalStateOf>[0]);
  return journal === 'INPUT_REQUIRED' || journal === 'AUTH_REQUIRED';
};

/**
 * Whether `message` is the agent's and of our task: role agent, its taskId ours (`taskIdRequired`: it must name one,
 * as a stream's Message event must; else none is accepted too, as in a Task's own history), its contextId ours or none.
 */
export function ownAgentMessage(message: Message, owner: QuestionOwner, taskIdRequired: boolean): boolean {
  if (message.role !== 'ROLE_AGENT') return false;
  if (message.taskId === undefined || message.taskId === '') {
    if (taskIdRequired) return false;
  } else if (owner.taskId === undefined || message.taskId !== owner.taskId) return false;
  return !message.contextId || !owner.contextId || message.contextId === owner.contextId;
}

/**
 * One message holding the words of `messages` (oldest first): the only one as it is; several as one agent message
 * with the last one's ids and every part in order, a newline part between two messages. Undefined for none or when
 * none holds any text.
 */
export function questionMessageOf(messages: readonly Message[]): Message | undefined {
  const kept = messages.slice(-QUESTION_WORDS_MESSAGES).filter((message) => message.parts.some((part) => typeof part.text === 'string' && part.text.trim() !== ''));
  if (kept.length <= 1) return kept[0];
  const last = kept.at(-1)!;
  return {
    messageId: last.messageId,
    role: 'ROLE_AGENT',
    ...(last.taskId ? { taskId: last.taskId } : {}),
    ...(last.contextId ? { contextId: last.contextId } : {}),
    parts: kept.flatMap((message, index) => (index === 0 ? message.parts : [{ text: '\n' }, ...message.parts])),
  };
}

/**
 * The question's words in a parked Task without a status message: the agent's messages at the end of its `history`
 * after our last message (any user message ends the run) and after every message of `cuts` (the message of the last
 * status the row recorded when it was no question, and the last agent message that status followed, the row's
 * `questionWordsAfter`: a WORKING's progress message and all before it came before a later status, A36), of our task
 * (`ownAgentMessage`). Undefined when the Task has a status message, is not parked, or its history shows none.
 */
export function historyQuestionWords(task: Task, owner: QuestionOwner, cuts: string | readonly (string | undefined)[] = []): Message | undefined {
  if (task.status.message || !parked(task.status.state) || !task.history?.length) return undefined;
  const cutAt = new Set(typeof cuts === 'string' ? [cuts] : cuts.filter((cut) => cut !== undefined));
  const words: Message[] = [];
  for (let index = task.history.length - 1; index >= 0; index--) {
    const message = task.history[index]!;
    if (message.role !== 'ROLE_AGENT' || cutAt.has(message.messageId)) break;
    if (!ownAgentMessage(message, { taskId: owner.taskId ?? task.id, contextId: owner.contextId ?? task.contextId }, false)) break;
    words.unshift(message);
  }
  return questionMessageOf(words);
}

/**
 * The question's words on one stream, in the stream's order: the agent's Message events of our task since the
 * stream's last status (a status update or a Task). A parked status without a message that follows them takes them as
 * its message (`withWords`); a Message that follows such a status (before any other) gives that status again with the
 * words (`wordsAfter`), so the row's question shows them. Any status ends what came before it (A36).
 */
export class StreamQuestionWords {
  private messages: Message[] = [];
  private bareParked: TaskStatusUpdateEvent | undefined;

  constructor(private readonly owner: () => QuestionOwner) {}

  /**
   * `response` as it should be applied: a parked status update without a message, after Message events of our task
   * since the last status, carries them as its status message; any other status as it is. Every status (and Task)
   * ends the words before it, and records the last of them as its cut (`streamWordsCut`).
   */
  withWords(response: StreamResponse): StreamResponse {
    const cut = this.messages.at(-1)?.messageId;
    if ('statusUpdate' in response) {
      const event = response.statusUpdate;
      const words = questionMessageOf(this.messages);
      this.messages = [];
      const bare = !event.status.message && parked(event.status.state) && (!this.owner().taskId || event.taskId === this.owner().taskId);
      this.bareParked = bare && !words ? event : undefined;
      if (cut) streamCuts.set(event, cut);
      return bare && words ? withMessage(event, words) : response;
    }
    if ('task' in response) {
      this.messages = [];
      this.bareParked = undefined;
      if (cut) streamCuts.set(response.task, cut);
    }
    return response;
  }

  /**
   * Takes a Message event: of our task, kept as words of the next parked status; after a parked status without a
   * message (and no status since), that status again carrying the words so far (to apply, in the stream's order).
   */
  wordsAfter(message: Message): StreamResponse | undefined {
    if (!ownAgentMessage(message, this.owner(), true)) return undefined;
    this.messages.push(message);
    if (this.messages.length > QUESTION_WORDS_MESSAGES) this.messages.shift();
    if (!this.bareParked) return undefined;
    const words = questionMessageOf(this.messages);
    return words ? withMessage(this.bareParked, words) : undefined;
  }
}
