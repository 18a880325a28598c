#!/usr/bin/env node
// Sends one message to an A2A agent and follows its task to the end, with plain node:
//
//   node follow.mjs <agent-card-or-base-url> [text]        (or A2A_AGENT_URL=... node follow.mjs)
//
// 1. fetch the Agent Card and choose an interface this client speaks (JSON-RPC or HTTP+JSON, A2A 1.0 or 0.3);
// 2. send the message with `returnImmediately`, so the agent answers with the task at once;
// 3. follow the task with SubscribeToTask: the first event of each subscription is the task as it is now (it
//    replaces what we had), later events update it. A stream that ends before the task does is resubscribed after a
//    growing, jittered pause; when the agent will not stream the task (it is already terminal, or it does not
//    stream), one GetTask reads it instead;
// 4. show the typed errors: every failure is an `A2AError` with a stable `code`, whether it is retryable, and
//    whether the request reached the agent (`deliveryOf`: 'not-sent' | 'maybe' | 'received').
// Prints one JSON line at the end. Exit code 0 when the task ended, 1 otherwise.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  A2AError,
  TaskNotFoundError,
  createTransport,
  defaultTransports,
  deliveryOf,
  fetchAgentCard,
  isInterruptedTaskState,
  isRetryable,
  isTerminalTaskState,
  selectInterface,
} from '@durable-a2a/a2a';

/** Subscriptions tried at most, and the pause between them (full jitter, doubling up to the cap). */
const MAX_SUBSCRIPTIONS = 30;
const BACKOFF_BASE_MS = 100;
const BACKOFF_CAP_MS = 2_000;

const agentUrl = process.argv[2] ?? process.env.A2A_AGENT_URL;
const text = process.argv[3] ?? 'Hello, agent!';
if (!agentUrl) {
  console.error('usage: node follow.mjs <agent-card-or-base-url> [text]');
  process.exit(2);
}

/** What an error says, the same way for every kind of A2A failure. */
const describe = (error) =>
  error instanceof A2AError
    ? { name: error.name, code: error.code, retryable: isRetryable(error), delivery: deliveryOf(error), message: error.message }
    : { name: String(error?.name ?? 'Error'), message: String(error?.message ?? error) };

const card = await fetchAgentCard(agentUrl);
const agentInterface = selectInterface(card, { transports: defaultTransports });
if (!agentInterface) throw new Error(`${card.name}: no interface this client speaks (${card.interfaces.map((i) => i.protocolBinding).join(', ')})`);
const transport = createTransport(agentInterface, { transports: defaultTransports, requestTimeoutMs: 30_000, idleTimeoutMs: 60_000 });

// Send. A retry must reuse the same messageId, so an agent that got the first try can recognise the second.
const message = { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }] };
let answer;
for (let attempt = 1; ; attempt++) {
  try {
    answer = await transport.sendMessage({ message, configuration: { returnImmediately: true } });
    break;
  } catch (error) {
    // 'not-sent': nothing reached the agent, a resend is safe. 'maybe': it may have the message; resend the same
    // messageId only to an agent known to deduplicate. Not retryable: the agent said no, resending will not help.
    if (!isRetryable(error) || deliveryOf(error) !== 'not-sent' || attempt === 3) throw error;
    await sleep(BACKOFF_BASE_MS * attempt);
  }
}

if ('message' in answer) {
  // A direct reply: no task to follow.
  console.log(JSON.stringify({ agent: card.name, binding: transport.binding, reply: partsText(answer.message.parts) }));
  process.exit(0);
}

let task = answer.task;
let subscriptions = 0;
let taskReads = 0;
const finished = () => isTerminalTaskState(task.status.state) || isInterruptedTaskState(task.status.state);

while (!finished() && subscriptions < MAX_SUBSCRIPTIONS) {
  subscriptions++;
  let readInstead = card.capabilities.streaming === false;
  if (!readInstead) {
    try {
      for await (const { response } of transport.subscribeToTask({ id: task.id })) task = applyEvent(task, response);
    } catch (error) {
      // The agent will not stream this task (not retryable: e.g. UnsupportedOperationError for a task that has
      // already ended): read it once instead. A dropped connection or an idle stream is retryable: resubscribe.
      if (!(error instanceof A2AError)) throw error;
      if (!isRetryable(error)) readInstead = true;
    }
  }
  if (readInstead || !finished()) {
    if (readInstead) {
      taskReads++;
      task = await transport.getTask({ id: task.id });
    }
    if (!finished()) await sleep(Math.random() * Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** subscriptions));
  }
}

// A typed error, on purpose: the agent knows no such task.
let unknownTask;
try {
  await transport.getTask({ id: randomUUID() });
} catch (error) {
  unknownTask = { ...describe(error), isTaskNotFound: error instanceof TaskNotFoundError };
}

console.log(
  JSON.stringify({
    agent: card.name,
    binding: transport.binding,
    protocolVersion: transport.protocolVersion,
    taskId: task.id,
    state: task.status.state,
    artifacts: (task.artifacts ?? []).map((artifact) => partsText(artifact.parts)),
    subscriptions,
    taskReads,
    unknownTask,
  }),
);
process.exit(finished() ? 0 : 1);

/** The task after one stream event: a task replaces it; a status or artifact update changes it. */
function applyEvent(current, response) {
  if ('task' in response) return response.task;
  if ('statusUpdate' in response) return { ...current, status: response.statusUpdate.status };
  if ('artifactUpdate' in response) {
    const { artifact, append } = response.artifactUpdate;
    const artifacts = [...(current.artifacts ?? [])];
    const at = artifacts.findIndex((known) => known.artifactId === artifact.artifactId);
    if (at < 0) artifacts.push(artifact);
    else artifacts[at] = append ? { ...artifacts[at], parts: [...artifacts[at].parts, ...artifact.parts] } : artifact;
    return { ...current, artifacts };
  }
  return current;
}

/** The text parts of a message or artifact, joined. */
function partsText(parts) {
  return parts.map((part) => part.text ?? '').join('');
}
