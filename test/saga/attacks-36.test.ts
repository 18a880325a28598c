/**
 * Attack round 36: the attempt deadline and the `unsent` guard (applyStatus-5.lua ARGV[21]) against a SendMessage that
 * may have left. Real redis-server, real fleet (send and reconcile queues), raw node:http agents (exact bytes), counting
 * SendMessage at each agent. The findings are marked FIXED FINDING (each verified failing on main); the other `it`s
 * hold and stay as regression tests. Beside the unproven release, its counterpart: a release on a search that proved
 * our message absent, which must stay re-delegable (release37).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { DelegationRecord } from '@durable-a2a/shared';
import type { StartFleetOptions } from '@durable-a2a/workers';
import { reconcileDelegation } from '../../packages/workers/src/delegation/runs/reconcile.ts';
import { eventually, workflowSettled } from '../harness/fleet.ts';
import { expectLeftToAPersonNeverB, useFieldCases } from '../harness/field-cases.ts';
import { goneAgent, rawCardOf as cardOf } from '../harness/gone-agent.ts';
import { findFreePort, listenOnLoopback } from '../harness/ports.ts';
import { task } from '../harness/scripted-agent.ts';

const h = useFieldCases();
const DAY_MS = 86_400_000;
const FINISHED = ['COMPLETED', 'FAILED', 'CANCELED', 'REJECTED', 'AMBIGUOUS', 'LOST'];

/**
 * Agent A as two raw servers: its Agent Card (up from the start; skill `scripted`), and its JSON-RPC endpoint on
 * `rpcPort`, which nobody listens on until `listen()` (a SendMessage before it: ECONNREFUSED, nothing sent). Once
 * listening, SendMessage is taken (the agent has our message: the work may be under way) and never answered until
 * `dropHeld()` cuts it; ListTasks is not supported (-32601: no search can prove our message absent); anything else is
 * TaskNotFound.
 */
async function lateAgent(onSend: () => void) {
  const rpcPort = await findFreePort();
  const sockets = new Set<Socket>();
  const track = (server: Server) => server.on('connection', (socket: Socket) => (sockets.add(socket), socket.on('close', () => sockets.delete(socket))));
  const card = cardOf(`http://127.0.0.1:${rpcPort}/a2a/jsonrpc`);
  const json = (response: ServerResponse, payload: unknown) => {
    const body = JSON.stringify(payload);
    response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    response.end(body);
  };
  const cardServer = createServer((_request, response) => json(response, card));
  track(cardServer);
  const cardPort = await listenOnLoopback(cardServer);
  const held: ServerResponse[] = [];
  const sends: string[] = [];
  const rpc = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const envelope = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: unknown; method: string; params: { message?: { messageId: string } } };
      if (envelope.method === 'SendMessage') {
        sends.push(envelope.params.message!.messageId);
        held.push(response);
        onSend();
        return;
      }
      if (envelope.method === 'ListTasks') return json(response, { jsonrpc: '2.0', id: envelope.id, error: { code: -32601, message: 'Method not found' } });
      return json(response, { jsonrpc: '2.0', id: envelope.id, error: { code: -32001, message: 'Task not found' } });
    });
  });
  track(rpc);
  return {
    cardUrl: `http://127.0.0.1:${cardPort}/.well-known/agent-card.json`,
    count: (method: string) => (method === 'SendMessage' ? sends.length : 0),
    listen: () => listenOnLoopback(rpc, rpcPort),
    dropHeld: () => held.splice(0).forEach((response) => response.destroy()),
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await Promise.all([cardServer, rpc].filter((server) => server.listening).map((server) => new Promise((resolve) => server.close(resolve))));
    },
  };
}

/*
 * FIXED FINDING (kind: the attempt deadline over a SendMessage that may have left). Input: agent A's endpoint refuses
 * the first SendMessage (ECONNREFUSED: noteUnreachable-1.lua journals `delivery: not-sent` and clears the mark); the
 * next try marks the row again and its SendMessage reaches A, which takes it and holds the answer; the attempt then
 * passes its deadline. The row is marked, but its `error` is still the earlier try's `not-sent` (markSending-2.lua
 * leaves it): `mayHaveReachedAgent` read that as "this send never left", the reconciler's `deadline-passed` row wrote
 * FAILED DEADLINE_EXCEEDED (re-delegable) over the mark (`unsent: 'as-read'` passed: the row was as read), and the
 * step went to agent B, which booked it too. Observed on main: hotel.1 FAILED DEADLINE_EXCEEDED, hotel.2 COMPLETED at
 * B, one SendMessage at each agent. Expected: a marked row is never ended blind at its deadline, whatever error an
 * earlier try left: the reconciler searches (A cannot list tasks: AMBIGUOUS for a person), B never sent to.
 */
describe('attack 36: the attempt deadline over a send that may have left', () => {
  it('a try refused (ECONNREFUSED), the next one taken and held by A, the deadline passes: never FAILED, B never sent to', async () => {
    let offsetMs = 0;
    let sent!: () => void;
    const sendArrived = new Promise<void>((resolve) => (sent = resolve));
    const a = await lateAgent(() => ((offsetMs = 2 * DAY_MS), sent()));
    const b = await h.agentWith({ SendMessage: (params) => ({ result: { task: task('TB', 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: { a1: 'B did it' } }) } }) });
    try {
      const prefix = h.newPrefix();
      const producer = h.producer(prefix);
      const first = await producer.registerAgent(a.cardUrl);
      await eventually(async () => Date.now() > Date.parse(first.registeredAt), 'a later millisecond', 1_000, 1);
      await producer.registerAgent(b.cardUrl);
      const fleet = await h.fleetFor(prefix, { reconcileIntervalMs: 300, unreachableBackoff: { baseMs: 200, capMs: 500 }, requestTimeoutMs: 60_000, now: () => Date.now() + offsetMs });
      const { id } = await producer.startWorkflow({ workflowId: `late-${prefix}`, maxAttemptsPerStep: 2, steps: [{ name: 'hotel', skill: 'scripted', message: { text: 'book' } }] });
      const ref = { workflowId: id, delegationId: 'hotel.1' };
      // The first try could not reach A (nothing sent): journaled, the row waits for its next try.
      await eventually(async () => ((await producer.journal.getDelegation(ref))?.unreachableCount ?? 0) >= 1, 'one unreachable try journaled', 20_000, 20);
      await a.listen();
      await sendArrived;
      // A holds our message; the clock is past the attempt deadline. One reconcile of the row as it is now.
      const marked = await eventually(async () => {
        const row = await producer.journal.getDelegation(ref);
        return row?.sendStartedAt !== undefined ? row : undefined;
      }, 'the row marked', 10_000, 10);
      expect(marked.error?.delivery).toBe('not-sent');
      await reconcileDelegation(fleet.context, ref, 'check-36');
      const afterReconcile = (await producer.journal.getDelegation(ref)) as DelegationRecord;
      expect(afterReconcile.state).not.toBe('FAILED');
      // A's answer never comes: the connection is cut (delivery maybe), the send run notes it and lets go of the row;
      // then one reconcile: the search cannot prove our message absent (A cannot list tasks): a person.
      a.dropHeld();
      await eventually(async () => (await producer.journal.getDelegation(ref))?.error?.delivery === 'maybe' && (await fleet.context.journal.followLeaseRemainingMs(ref)) === 0, 'the cut send noted, its lease let go', 20_000, 20);
      await eventually(async () => {
        await reconcileDelegation(fleet.context, ref, 'check-36b');
        const current = await producer.journal.getDelegation(ref);
        return current && FINISHED.includes(current.state) ? current : undefined;
      }, 'hotel.1 finished', 20_000, 200);
      await expectLeftToAPersonNeverB(producer, id, a, b);
    } finally {
      await a.close();
    }
  }, 90_000);
});

/*
 * FIXED FINDING (kind: a resend permission read as a proof of absence). Input: agent A is listed as deduplicating by
 * messageId (`deduplicatingAgents`) and cannot list tasks (ListTasks -32601); it takes each SendMessage and cuts the
 * connection without an answer (delivery maybe: the work may be under way). The reconciler's search cannot conclude,
 * and the deduplicating agent lets it resend the same messageId (safe AT A). Observed on main: after `sendAttempts`
 * sends, hotel.1 FAILED SEND_ATTEMPTS_EXHAUSTED ("SendMessage created no task at the agent", retryable) and the step
 * went to agent B, which booked it; past the deadline the same search row wrote FAILED DEADLINE_EXCEEDED "our message
 * was proven absent". Nothing proved it absent: a deduplicating agent makes a resend to IT safe, never a second agent.
 * Expected: AMBIGUOUS for a person, B never sent to.
 */
describe('attack 36: a deduplicating agent that cannot list tasks', () => {
  it('A takes each SendMessage and cuts the connection; resent up to sendAttempts, then a person, never agent B', async () => {
    const a = await h.agentWith({ SendMessage: () => ({ raw: '' }) });
    const { b, producer, id } = await h.stepOverTwo(a.cardUrl, { reconcileIntervalMs: 300, requestTimeoutMs: 1_000, sendAttempts: 2, deduplicatingAgents: [a.cardUrl] }, 60_000);
    await expectLeftToAPersonNeverB(producer, id, a, b, 2);
  }, 90_000);
});

/*
 * FIXED FINDING (kind: a resend permission read as a proof of absence; the release's row). Input: agent A (listed as
 * deduplicating, no ListTasks) takes our SendMessage, cuts the connection and goes down (a crash mid-work: every later
 * call ECONNREFUSED). The search cannot conclude; the deduplicating agent lets the reconciler release the row for a
 * resend (releaseForResend-1.lua clears the mark), and the resend cannot reach A: journaled `not-sent`, waiting for
 * it until the step's `unreachableForMs`. Observed on main: FAILED AGENT_UNREACHABLE ("nothing was sent") on the
 * unmarked row, the step booked again at agent B, though A had our first send. Expected: the row shows that a send of
 * ours may be at A (policy.ts `earlierSendsMayHaveLeft`: a mark counted, released, never journaled as not sent), so
 * neither the give-up nor the deadline writes a re-delegable FAILED over it: a person (AMBIGUOUS), B never sent to.
 */
/**
 * `goneAgent(listing)` as agent A, registered before agent B (B books the step as TB, COMPLETED); a fleet (reconcile
 * every 300 ms, requests bounded by 1 s, unreachable backoff 200 to 500 ms, `fleetOptions` over it) and one step
 * `hotel` (skill `scripted`, `unreachableForMs` 3 s, 2 attempts). Waits until hotel.1 is finished and returns its
 * row with the producer, the workflow id and both agents; A is closed afterwards whatever happened.
 */
async function goneThenUnreachable(listing: 'unsupported' | 'empty', fleetOptions: (cardUrl: string) => Partial<StartFleetOptions>) {
  const a = await goneAgent(listing);
  try {
    const b = await h.agentWith({ SendMessage: (params) => ({ result: { task: task('TB', 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: { a1: 'B did it' } }) } }) });
    const prefix = h.newPrefix();
    const producer = h.producer(prefix);
    const first = await producer.registerAgent(a.cardUrl);
    await eventually(async () => Date.now() > Date.parse(first.registeredAt), 'a later millisecond', 1_000, 1);
    await producer.registerAgent(b.cardUrl);
    await h.fleetFor(prefix, { reconcileIntervalMs: 300, requestTimeoutMs: 1_000, unreachableBackoff: { baseMs: 200, capMs: 500 }, ...fleetOptions(a.cardUrl) });
    const { id } = await producer.startWorkflow({ workflowId: `gone-${prefix}`, maxAttemptsPerStep: 2, steps: [{ name: 'hotel', skill: 'scripted', message: { text: 'book' }, unreachableForMs: 3_000 }] });
    const row = await eventually(async () => {
      const current = await producer.journal.getDelegation({ workflowId: id, delegationId: 'hotel.1' });
      return current && FINISHED.includes(current.state) ? current : undefined;
    }, 'hotel.1 finished', 60_000, 50);
    return { producer, id, a, b, row };
  } finally {
    await a.close();
  }
}

describe('attack 36: a resend released without proof, then the agent unreachable', () => {
  it('A takes our message and cuts the connection, answers ListTasks -32601 and goes down; the resend waits for A past unreachableForMs: a person, never agent B', async () => {
    const { producer, id, a, b } = await goneThenUnreachable('unsupported', (cardUrl) => ({ deduplicatingAgents: [cardUrl] }));
    expect((await expectLeftToAPersonNeverB(producer, id, a, b)).resendCount).toBeGreaterThanOrEqual(1);
  }, 90_000);
});

/*
 * FIXED FINDING (release37; kind: a proven absence read as a send that may have left). Input: agent A takes our
 * SendMessage and cuts the connection (delivery maybe), answers ListTasks with an empty listing (the search PROVES our
 * message absent) and goes down: the resend cannot reach A until the step's `unreachableForMs`. Observed on main:
 * AMBIGUOUS "no search proved our message absent" (`earlierSendsMayHaveLeft` counted the released send), a person
 * asked and the saga stalled. Expected: the proven release covers that send (releaseForResend-1.lua
 * `provenAbsentSends`), so the give-up is FAILED AGENT_UNREACHABLE, re-delegable: agent B books the step.
 */
describe('release 37: a resend released on a proven absence, then the agent unreachable', () => {
  it('A takes our message and cuts the connection, lists no task of ours and goes down; past unreachableForMs: FAILED, agent B books it', async () => {
    const { producer, id, a, b, row } = await goneThenUnreachable('empty', () => ({ sendAttempts: 3 }));
    const view = await workflowSettled(producer, id, 20_000);
    expect(row.state).toBe('FAILED');
    expect(row.error?.code).toBe('AGENT_UNREACHABLE');
    expect(row.resendCount).toBe(1);
    expect(row.provenAbsentSends).toBe(1);
    expect(view.state).toBe('COMPLETED');
    expect(b.count('SendMessage')).toBe(1);
    expect(a.count('SendMessage')).toBe(1);
  }, 90_000);
});

/*
 * FIXED FINDING (review36; kind: a refused resend read as the attempt's end). Input: agent A (listed as deduplicating,
 * no ListTasks) takes our first SendMessage and cuts the connection (delivery maybe); the search cannot conclude, the
 * deduplicating agent lets the reconciler release the row for a resend; A refuses the resend with -32602 (a permanent
 * refusal proving THIS try created nothing). Observed on integrate: hotel.1 FAILED INVALID_PARAMS on the fence alone
 * (`send-failed` permanent), though A may hold our first message and be doing the work. Expected: a person
 * (AMBIGUOUS, `earlierSendsMayHaveLeft`), B never sent to.
 */
describe('review 36: a resend released without proof, then refused', () => {
  it('A takes our message and cuts the connection, then refuses the resend with -32602: a person, never FAILED, never agent B', async () => {
    const a = await h.agentWith({ SendMessage: (_params, call) => (call.count === 1 ? { raw: '' } : { error: { code: -32602, message: 'Invalid params' } }) });
    const { b, producer, id } = await h.stepOverTwo(a.cardUrl, { reconcileIntervalMs: 300, requestTimeoutMs: 1_000, sendAttempts: 3, deduplicatingAgents: [a.cardUrl] }, 60_000);
    expect((await expectLeftToAPersonNeverB(producer, id, a, b, 2)).resendCount).toBeGreaterThanOrEqual(1);
  }, 90_000);
});
