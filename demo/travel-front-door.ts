/**
 * `pnpm demo:front-door`: the travel orchestrator as a plain `@a2a-js/sdk` client that knows nothing of
 * durable-a2a but its URL and an API token. It books a flight, a hotel (which asks a question) and a car
 * (the first car agent rejects) through the front door, one SendMessage each, while the worker process is
 * SIGKILLed mid-flight and the orchestrator retries its flight message. Prints a timeline and exits 0
 * only if every expectation held.
 *
 * With no REDIS_URL it starts its own redis-server (AOF on) in a temp dir.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Registry } from 'prom-client';
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { SendMessageRequest, TaskState, type Task } from '@a2a-js/sdk';
import { createLogger } from '@durable-a2a/shared';
import { createServer } from '@durable-a2a/producer/server';
import { startRedisServer } from '../test/harness/redis.ts';
import { spawnWorkerProcess, eventually, type WorkerProcess } from '../test/harness/fleet.ts';
import { bookingBehaviour, startTravelCast } from '../test/harness/travel.ts';
import { bearerFetch } from '../test/harness/front-door.ts';
import { quietSdkConsole } from '../test/harness/quiet-sdk.ts';
import { Timeline } from './timeline.ts';

quietSdkConsole();

const timeline = new Timeline();
const redisServer = process.env.REDIS_URL ? undefined : await startRedisServer({ appendOnly: true, detached: true });
const redisUrl = process.env.REDIS_URL ?? redisServer!.url;
const prefix = `demo-front-${Date.now()}`;
const apiToken = randomBytes(12).toString('hex');
const workers: WorkerProcess[] = [];
process.on('exit', () => workers.forEach((worker) => worker.child.kill('SIGKILL')));

const cast = await startTravelCast();
cast.flight.setBehaviour(bookingBehaviour(cast.bookings.url, 'flight', { workMs: 2_000 }));
cast.car2.setBehaviour(bookingBehaviour(cast.bookings.url, 'car'));
const api = createServer({ redisUrl, prefix, addressPolicy: { allowLoopback: true }, apiTokens: [apiToken], logger: createLogger({ level: 'warn' }), metricsRegistry: new Registry() });
const apiUrl = await api.listen({ port: 0, host: '127.0.0.1' });
const startWorker = async () => {
  const worker = spawnWorkerProcess({ REDIS_URL: redisUrl, DA2A_PREFIX: prefix, LOG_LEVEL: 'silent', DA2A_ALLOW_LOOPBACK: 'true' });
  workers.push(worker);
  await worker.ready;
  return worker;
};

/** What the orchestrator sends: text to a skill, or a follow-up on a task. */
const message = (text: string, options: { skill?: string; taskId?: string; messageId?: string } = {}) =>
  SendMessageRequest.fromJSON({ message: { messageId: options.messageId ?? randomUUID(), role: 'ROLE_USER', parts: [{ text }], taskId: options.taskId }, metadata: options.skill ? { skill: options.skill } : undefined });
const textOf = (task: Task) => [...task.artifacts.flatMap((artifact) => artifact.parts), ...(task.status?.message?.parts ?? [])].map((part) => (part.content?.$case === 'text' ? part.content.value : '')).join(' ').trim();
const stateOf = (task: Task) => TaskState[task.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED];

let exitCode = 1;
try {
  timeline.heading(`durable-a2a front door demo: a plain A2A client at ${apiUrl}`);
  for (const agent of [cast.flight, cast.hotel, cast.car1, cast.car2]) {
    const response = await fetch(`${apiUrl}/v1/agents`, { method: 'POST', headers: { authorization: `Bearer ${apiToken}`, 'content-type': 'application/json' }, body: JSON.stringify({ cardUrl: agent.cardUrl }) });
    timeline.note(`operator registered ${agent.card.name} (HTTP ${response.status})`);
  }
  const first = await startWorker();
  const orchestrator = await new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [new JsonRpcTransportFactory({ fetchImpl: bearerFetch(apiToken) })] }),
  ).createFromUrl(apiUrl);
  const card = await orchestrator.getAgentCard();
  timeline.note(`orchestrator read the front door's card: skills ${card.skills.map((skill) => skill.id).join(', ')}`);

  timeline.heading('1. Flight: the worker process is SIGKILLed while the flight agent works');
  const flightRequest = message('Book a flight JFK to LHR on 12 May', { skill: 'book-flight' });
  const flightAnswer = orchestrator.sendMessage(flightRequest) as Promise<Task>;
  await eventually(async () => cast.flight.receivedMessages.length > 0, 'the flight agent has the task', 20_000);
  await first.kill('SIGKILL');
  timeline.note(`worker ${first.child.pid} SIGKILLed mid-flight; a new worker starts`);
  await startWorker();
  const answered = await flightAnswer;
  // A blocking send answers within 30 s; a caller whose answer came back still working reads the task again.
  const flight = await eventually(async () => {
    const task = answered.status?.state === TaskState.TASK_STATE_COMPLETED ? answered : await orchestrator.getTask({ tenant: '', id: answered.id, historyLength: 0 });
    return !['TASK_STATE_WORKING', 'TASK_STATE_SUBMITTED'].includes(stateOf(task)) && task;
  }, 'the flight task ends', 60_000);
  timeline.note(`flight task ${flight.id.slice(0, 24)}…: ${stateOf(flight)} "${textOf(flight)}"`);
  timeline.expect('the flight completed for the orchestrator despite the crash', stateOf(flight) === 'TASK_STATE_COMPLETED');
  const retried = (await orchestrator.sendMessage(flightRequest)) as Task;
  timeline.note('orchestrator retried its flight message (same messageId), as a client does after a timeout');
  timeline.expect('the retry is the same task', retried.id === flight.id);
  timeline.expect('the flight agent saw exactly 1 SendMessage', cast.flight.sendMessageCount() === 1);

  timeline.heading("2. Hotel: the agent's question reaches the orchestrator, its follow-up is the reply");
  const asked = (await orchestrator.sendMessage(message('Book a hotel near Hyde Park, 12-15 May', { skill: 'book-hotel' }))) as Task;
  timeline.note(`hotel task: ${stateOf(asked)} "${textOf(asked)}"`);
  timeline.expect('the hotel question is the front task\'s INPUT_REQUIRED', stateOf(asked) === 'TASK_STATE_INPUT_REQUIRED' && textOf(asked) === 'two rooms or one?');
  const hotel = (await orchestrator.sendMessage(message('two rooms', { taskId: asked.id }))) as Task;
  timeline.note(`hotel task after the follow-up: ${stateOf(hotel)} "${textOf(hotel)}"`);
  timeline.expect('the hotel completed on the same task', hotel.id === asked.id && stateOf(hotel) === 'TASK_STATE_COMPLETED');

  timeline.heading('3. Car: the first car agent rejects, the front door re-delegates by skill');
  const car = (await orchestrator.sendMessage(message('Rent a car at LHR', { skill: 'rent-car' }))) as Task;
  timeline.note(`car task: ${stateOf(car)} "${textOf(car)}"; ${cast.car1.card.name} saw ${cast.car1.sendMessageCount()} SendMessage, ${cast.car2.card.name} ${cast.car2.sendMessageCount()}`);
  timeline.expect('the car completed after one re-delegation', stateOf(car) === 'TASK_STATE_COMPLETED' && cast.car1.sendMessageCount() === 1 && cast.car2.sendMessageCount() === 1);

  const listed = await orchestrator.listTasks({ tenant: '', contextId: '', status: TaskState.TASK_STATE_UNSPECIFIED, pageToken: '', statusTimestampAfter: undefined });
  timeline.expect("ListTasks gives the orchestrator's three tasks", listed.tasks.length === 3);
  exitCode = timeline.summary() ? 0 : 1;
} catch (error) {
  timeline.fail(error);
  timeline.summary();
} finally {
  await Promise.all(workers.map((worker) => worker.kill('SIGTERM')));
  await api.close();
  await cast.close();
  await redisServer?.stop();
}
process.exit(exitCode);
