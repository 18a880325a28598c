/**
 * `pnpm demo`: the travel scenario end to end against real A2A agents built on
 * @a2a-js/sdk (flight, hotel, two car agents) and a booking service, with a
 * worker process that is SIGKILLed mid-flight. Prints a timeline and exits 0
 * only if every expectation held. `--keep` leaves the API, Bull Board, /ui and the worker's /metrics up.
 *
 * With no REDIS_URL it starts its own redis-server (AOF on) in a temp dir.
 */
import { randomBytes } from 'node:crypto';
import { Registry } from 'prom-client';
import { createLogger } from '@durable-a2a/shared';
import { createProducer, type WorkflowView } from '@durable-a2a/producer';
import { createServer } from '@durable-a2a/producer/server';
import { startRedisServer } from '../test/harness/redis.ts';
import { runsSlowly } from '../test/harness/agent-behaviours.ts';
import { spawnWorkerProcess, eventually, type WorkerProcess } from '../test/harness/fleet.ts';
import { bookingBehaviour, startTravelCast, travelWorkflow } from '../test/harness/travel.ts';
import { Timeline } from './timeline.ts';
import { quietSdkConsole } from '../test/harness/quiet-sdk.ts';

quietSdkConsole();

const keep = process.argv.includes('--keep');
// SIGTERM as well as Ctrl+C stops everything this process started (workers, agents, redis-server).
let waitForStop: ((signal: NodeJS.Signals) => void) | undefined;
let stopRequested = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (waitForStop) return waitForStop(signal);
    if (stopRequested) return;
    stopRequested = true;
    void cleanup().finally(() => process.exit(1));
  });
}
// Whatever happens, no child outlives the demo.
process.on('exit', () => {
  try {
    for (const worker of workers) worker.child.kill('SIGKILL');
  } catch {
    // a signal before the workers list existed: nothing was started yet
  }
});
/** How long cleanup may take before the demo exits anyway (children get SIGKILL on exit). */
const CLEANUP_TIMEOUT_MS = 15_000;
const timeline = new Timeline();
// Detached: a Ctrl+C (sent to the whole process group) must not stop Redis before cleanup() closed its clients.
const redisServer = process.env.REDIS_URL ? undefined : await startRedisServer({ appendOnly: true, detached: true });
const redisUrl = process.env.REDIS_URL ?? redisServer!.url;
const prefix = `demo-${Date.now()}`;
const apiToken = process.env.DA2A_API_TOKENS?.split(',')[0] ?? randomBytes(12).toString('hex');
const workers: WorkerProcess[] = [];

const cast = await startTravelCast({ car2: runsSlowly(60_000, 'car reserved') });
cast.flight.setBehaviour(bookingBehaviour(cast.bookings.url, 'flight', { workMs: 1_500 }));
const producer = createProducer({ redis: redisUrl, addressPolicy: { allowLoopback: true }, prefix });
const api = createServer({ redisUrl, prefix, addressPolicy: { allowLoopback: true }, apiTokens: [apiToken], logger: createLogger({ level: 'warn' }), metricsRegistry: new Registry() });
const apiUrl = await api.listen({ port: Number(process.env.PORT ?? (keep ? 8080 : 0)), host: '127.0.0.1' });

const workerEnvironment = (extra: Record<string, string> = {}) => ({
  REDIS_URL: redisUrl,
  DA2A_PREFIX: prefix,
  LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent',
  DA2A_HTTP_VERIFIERS: JSON.stringify({ booking: { urlTemplate: `${cast.bookings.url}/bookings/{subjectMessageId}`, effectField: 'status', presentValues: ['booked'] } }),
  DA2A_METRICS_PORT: '0',
  // The demo agents listen on 127.0.0.1; production keeps the default (public addresses only).
  DA2A_ALLOW_LOOPBACK: 'true',
  ...extra,
});
const startWorker = async (extra: Record<string, string> = {}) => {
  const worker = spawnWorkerProcess(workerEnvironment(extra));
  workers.push(worker);
  await worker.ready;
  return worker;
};
const attempt = (view: WorkflowView, step: string, index = 0) => view.steps.find((candidate) => candidate.name === step)?.attempts[index];
const get = () => producer.get('trip');

let exitCode = 1;
try {
  timeline.heading(`durable-a2a travel demo (Redis ${redisServer ? `embedded on ${redisUrl}, AOF on` : redisUrl})`);
  for (const agent of [cast.flight, cast.hotel, cast.car1, cast.car2]) {
    const registered = await producer.registerAgent(agent.cardUrl);
    timeline.note(`registered ${registered.card.name} (${registered.card.skills.map((skill) => skill.id).join(', ')})`);
  }

  // 1. Journal three intents; flight and hotel go out; the worker dies before the hotel's task id is recorded.
  timeline.heading('1. Journal first, then a crash between "sent" and "recorded"');
  await producer.startWorkflow(travelWorkflow('trip', { parallelFlightAndHotel: true }));
  const journaled = await get();
  for (const step of journaled.steps) {
    const first = step.attempts[0]!;
    timeline.note(`journaled ${step.name}: ${first.state}${first.held ? ' (held until flight and hotel complete)' : ''}, messageId ${first.messageId.slice(0, 8)}, agent ${first.agentCardUrl.split('/')[2]}`);
  }
  timeline.expect('three intents journaled before any I/O', journaled.steps.every((step) => step.attempts[0]?.state === 'INTENT'));
  const first = await startWorker({ DA2A_CRASH_AT: 'send.after-request@hotel', DA2A_CONCURRENCY: 'send=1' });
  timeline.note(`worker ${first.child.pid} started with the crash point send.after-request@hotel`);
  const died = await first.exited;
  const afterCrash = await get();
  const flightTask = attempt(afterCrash, 'flight')!;
  const hotelIntent = attempt(afterCrash, 'hotel')!;
  timeline.note(`worker ${first.child.pid} killed by ${died.signal} right after the hotel agent accepted SendMessage`);
  timeline.note(`flight: task ${flightTask.taskId?.slice(0, 8)} ${flightTask.state}; hotel: ${hotelIntent.state}, no task id recorded; car: never sent`);
  timeline.expect('worker died by SIGKILL at the crash point', died.signal === 'SIGKILL');
  timeline.expect('flight task recorded and streaming', Boolean(flightTask.taskId) && ['SUBMITTED', 'WORKING'].includes(flightTask.state));
  timeline.expect('hotel sent but not recorded', hotelIntent.state === 'INTENT' && !hotelIntent.taskId && hotelIntent.sendStartedAt !== undefined);
  timeline.expect('hotel agent saw exactly 1 SendMessage', cast.hotel.sendMessageCount(hotelIntent.messageId) === 1);
  timeline.expect('the car intent was never sent', cast.car1.sendMessageCount() + cast.car2.sendMessageCount() === 0);

  // 2. A fresh worker recovers from the journal alone.
  timeline.heading('2. A fresh worker recovers from the journal');
  await eventually(async () => cast.bookings.booking(flightTask.messageId), 'the flight agent to finish while the fleet is down', 20_000);
  timeline.note('flight agent finished its task while no worker was running');
  const subscribesBefore = cast.flight.requestCount('SubscribeToTask');
  const second = await startWorker();
  timeline.note(`worker ${second.child.pid} started (start-up sweep of every unfinished record)`);
  const flightDone = await eventually(async () => {
    const view = await get();
    const flight = attempt(view, 'flight')!;
    return flight.state === 'COMPLETED' && flight.effect !== undefined && flight;
  }, 'flight recovered', 30_000);
  const refused = cast.flight.requestCount('SubscribeToTask') > subscribesBefore && cast.flight.requestCount('GetTask') > 0;
  timeline.note(`flight: reattached; ${refused ? 'SubscribeToTask refused (task terminal) → one GetTask' : 'read with GetTask'} → COMPLETED; booking verified ${flightDone.effect}`);
  timeline.expect('flight found COMPLETED and verified present in the booking service', flightDone.effect === 'present');
  const [question] = await eventually(async () => {
    const open = await producer.questions('trip');
    return open.length > 0 && open;
  }, 'the hotel question', 30_000);
  const hotelAdopted = attempt(await get(), 'hotel')!;
  timeline.note(`hotel: found by our messageId in ListTasks → adopted task ${hotelAdopted.taskId?.slice(0, 8)} (no resend)`);
  timeline.note(`hotel asks (${question!.state}): "${question!.text}"`);
  timeline.expect('hotel adopted, not resent', hotelAdopted.resendCount === 0 && cast.hotel.sendMessageCount(hotelAdopted.messageId) === 1);
  timeline.expect('the question is the agent\'s, persisted in the journal', question!.text === 'two rooms or one?');
  const reply = await fetch(`${apiUrl}/v1/workflows/trip/steps/hotel/reply`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ text: 'two rooms' }),
  });
  const replyBody = (await reply.json()) as { messageId: string };
  timeline.note(`answered "two rooms" through POST /v1/workflows/trip/steps/hotel/reply (HTTP ${reply.status})`);
  const hotelDone = await eventually(async () => {
    const hotel = attempt(await get(), 'hotel')!;
    return hotel.state === 'COMPLETED' && hotel.effect !== undefined && hotel;
  }, 'hotel completed', 30_000);
  const replyMessage = cast.hotel.receivedMessages.find((message) => message.messageId === replyBody.messageId);
  timeline.note(`hotel: reply sent on task ${replyMessage?.taskId?.slice(0, 8)} → COMPLETED; booking verified ${hotelDone.effect}`);
  timeline.expect('reply went out on the same task and context', replyMessage?.taskId === hotelAdopted.taskId && replyMessage?.contextId === hotelAdopted.contextId);

  // 3. Car: rejected, re-delegated by skill, then the trip is cancelled and compensated.
  timeline.heading('3. Re-delegation, cancellation, compensation');
  const carTwo = await eventually(async () => {
    const view = await get();
    const car = attempt(view, 'car', 1);
    return car?.state === 'WORKING' && view;
  }, 'car agent 2 working', 30_000);
  const car1 = attempt(carTwo, 'car', 0)!;
  const car2 = attempt(carTwo, 'car', 1)!;
  const carried = cast.car2.receivedMessages.find((message) => message.messageId === car2.messageId);
  const previous = (carried?.metadata?.durableA2a as { previousAttempts?: { taskId?: string; reason: string }[] } | undefined)?.previousAttempts ?? [];
  timeline.note(`car: released after flight and hotel; ${cast.car1.card.name} ${car1.state}: "${car1.error?.message}"`);
  timeline.note(`car: ${cast.car2.card.name} chosen by skill rent-car; its message carries task ${previous[0]?.taskId?.slice(0, 8)} and the reason`);
  timeline.expect('car agent 1 rejected', car1.state === 'REJECTED');
  timeline.expect('car agent 2 received the first task id and the reason', previous[0]?.taskId === car1.taskId && previous[0]!.reason.includes('no cars left'));
  const cancelResponse = await fetch(`${apiUrl}/v1/workflows/trip/cancel`, { method: 'POST', headers: { authorization: `Bearer ${apiToken}` } });
  timeline.note(`trip cancelled through POST /v1/workflows/trip/cancel (HTTP ${cancelResponse.status})`);
  const final = await eventually(async () => {
    const view = await get();
    return ['COMPENSATED', 'FAILED', 'NEEDS_ATTENTION', 'CANCELED'].includes(view.state) && view;
  }, 'compensation', 60_000);
  const undoOrder = cast.bookings.cancelOrder.map((key) => (key === hotelDone.messageId ? 'hotel' : key === flightDone.messageId ? 'flight' : key));
  timeline.note(`car: CancelTask → ${attempt(final, 'car', 1)!.state}`);
  for (const step of ['hotel', 'flight']) {
    const undo = final.steps.find((candidate) => candidate.name === step)!.compensations[0];
    timeline.note(`${step}: compensation ${undo?.delegationId} (own messageId ${undo?.messageId.slice(0, 8)}) ${undo?.state}; booking verified ${undo?.effect === 'absent' ? 'gone' : undo?.effect}`);
  }
  timeline.note(`workflow ${final.state}; booking service cancel order: ${undoOrder.join(' → ')}`);
  timeline.expect('workflow COMPENSATED', final.state === 'COMPENSATED');
  timeline.expect('hotel then flight compensated, each once', undoOrder.join(',') === 'hotel,flight');
  timeline.expect(
    'each compensation verified gone',
    ['hotel', 'flight'].every((step) => final.steps.find((candidate) => candidate.name === step)!.compensations[0]?.effect === 'absent'),
  );

  // SendMessage counts per messageId, as the agents counted them: every attempt and compensation in the history.
  // An attempt the journal closed before it was sent (its code says so; the code survives compaction) expects 0.
  timeline.heading('SendMessage calls per messageId (counted by the agents; every attempt of the history)');
  const agents = [cast.flight, cast.hotel, cast.car1, cast.car2];
  const NEVER_SENT_CODES = ['CANCELED_BEFORE_SEND', 'NEVER_SENT'];
  let allOnce = true;
  for (const step of final.steps) {
    for (const delegation of [...step.attempts, ...step.compensations]) {
      const expected = NEVER_SENT_CODES.includes(delegation.lastError?.code ?? '') ? 0 : 1;
      const count = agents.map((agent) => agent.sendMessageCount(delegation.messageId)).reduce((a, b) => a + b, 0);
      allOnce &&= count === expected;
      timeline.note(`${delegation.delegationId.padEnd(14)} ${delegation.messageId}  ${count}${expected === 0 ? ' (never sent: ' + delegation.lastError!.code + ')' : ''}  ${delegation.state}`);
    }
  }
  timeline.expect('every messageId was sent exactly once (never-sent attempts: zero times)', allOnce);
  const metrics = await fetch(`${apiUrl}/metrics`);
  timeline.expect('API /metrics answers in Prometheus text format', metrics.ok && (await metrics.text()).includes('durable_a2a_queue_jobs'));
  const workerMetrics = await (await fetch(`http://127.0.0.1:${second.opsPort()}/metrics`)).text();
  const expected = ['durable_a2a_transitions_total', 'durable_a2a_sends_total', 'durable_a2a_adoptions_total', 'durable_a2a_reconcile_runs_total', 'durable_a2a_redelegations_total', 'durable_a2a_verifications_total', 'durable_a2a_job_duration_seconds'];
  const missing = expected.filter((name) => !workerMetrics.includes(`${name}{`) && !workerMetrics.includes(`${name} `));
  timeline.note(`worker /metrics: ${workerMetrics.split('\n').filter((line) => line.startsWith('durable_a2a_adoptions_total') || line.startsWith('durable_a2a_redelegations_total')).join('; ')}`);
  timeline.expect('worker /metrics holds the documented metrics', missing.length === 0);
  exitCode = timeline.summary() ? 0 : 1;
  if (keep) {
    console.log(`\nAPI:        ${apiUrl}  (Authorization: Bearer ${apiToken})`);
    console.log(`Workflows:  ${apiUrl}/ui  (questions, attention, timelines; sign in with the API token ${apiToken})`);
    console.log(`Bull Board: ${apiUrl}/admin/queues  (the same sign-in)`);
    console.log(`Worker:     http://127.0.0.1:${second.opsPort()}/metrics  (the worker process's metrics, no token; /healthz and /readyz beside it)`);
    console.log(`Press Ctrl+C, or send SIGTERM to this process (kill ${process.pid}), to stop.`);
    await new Promise<NodeJS.Signals>((resolve) => (waitForStop = resolve));
  }
} catch (error) {
  timeline.fail(error);
} finally {
  await cleanup();
}
process.exit(exitCode);

/** Stops everything the demo started, once, within CLEANUP_TIMEOUT_MS. */
async function cleanup(): Promise<void> {
  const stopAll = async () => {
    await Promise.all(workers.map((worker) => worker.kill('SIGTERM')));
    await api.close();
    await producer.close();
    await cast.close();
    await redisServer?.stop();
  };
  await Promise.race([stopAll().catch(() => undefined), new Promise((resolve) => setTimeout(resolve, CLEANUP_TIMEOUT_MS).unref())]);
}
