/**
 * A compacted record's bytes for fixed input (journal/compacted-record.ts, updateWorkflow-4.lua): work on the
 * script's cost (issue 16) must leave every byte of a finished workflow's record as it was, and so must any
 * other change that does not mean to change the layout. The input reaches every branch of the record build:
 * short names and fields under their own name, embedded JSON and JSON kept as a string (it held "=" of its own),
 * times after createdAt, counters at '0' left out, operational fields left out, the "=" marks (definition,
 * requested context, status message, message stamp), an agent other than its step's, escapes ('"', '\', '/',
 * control characters, non-ASCII), digit strings with a leading zero, artifacts in two chunks, and push tokens.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { Part } from '@durable-a2a/a2a';
import { Journal, type DelegationRef } from '@durable-a2a/shared';
import { useRedisClient, useRedisServer } from './harness/redis.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
let journal: Journal;
let counter = 0;

const agent = 'http://agent.example/.well-known/agent-card.json';
const definition = (id: string) =>
  JSON.stringify({ workflowId: id, steps: [{ name: 'hotel', agent, message: { text: 'book a room' } }, { name: 'flight', agent, message: { text: 'fly "there" / back' } }], maxAttemptsPerStep: 2 });

const intent = (id: string, step: string, attempt: number, extra: Record<string, string> = {}) => ({
  workflowId: id,
  delegationId: `${step}.${attempt}`,
  step,
  kind: 'step',
  attempt: String(attempt),
  agentCardUrl: agent,
  messageId: `m-${step}-${attempt}`,
  requestedContextId: `c-${id}`,
  state: 'INTENT',
  message: JSON.stringify({ parts: [{ text: `do ${step} \u00e9\u4e2d / \\ "q"\n` }], metadata: { durableA2a: { workflowId: id, step, attempt } } }),
  createdAt: '1000',
  updatedAt: '1000',
  version: '1',
  pushToken: `secret-${step}`,
  ...extra,
});

async function run(ref: DelegationRef, taskId: string, statusParts: Part[], state: 'COMPLETED' | 'FAILED'): Promise<void> {
  const fence = await journal.claim(ref, 'worker');
  await journal.markSending(ref, fence, { url: 'http://agent.example/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' });
  await journal.applyStatus(ref, { fence, mode: 'event', state: 'WORKING', taskId, contextId: `c-${ref.workflowId}`, statusTimestamp: '2026-01-01T00:00:01.000Z' });
  await journal.applyArtifact(ref, fence, { artifact: { artifactId: `a-${taskId}`, name: 'result', description: 'tab\there', parts: [{ text: 'first / ' }] } });
  await journal.applyArtifact(ref, fence, { artifact: { artifactId: `a-${taskId}`, parts: [{ data: { n: 1, s: '=' } }] }, append: true, lastChunk: true });
  const statusMessage = { messageId: `s-${taskId}`, contextId: `c-${ref.workflowId}`, taskId, role: 'ROLE_AGENT' as const, parts: statusParts };
  await journal.applyStatus(ref, { fence, mode: 'event', state, taskId, statusTimestamp: '2026-01-01T00:00:02.5+01:00', statusMessage });
}

beforeEach(() => {
  journal = new Journal(redis(), { prefix: `cb${++counter}`, retentionMs: 60_000, now: () => 5_000 });
});

/**
 * The record's member texts, each byte for byte ("key":value as written), in sorted order where the script's order
 * is Lua's table order: the workflow's fields, each delegation's fields and its artifact fields. That order is not
 * part of the record (a reader parses JSON) and differs between redis-server processes (Lua's string hashing).
 */
function membersOf(record: string): { workflow: string[]; delegations: string[][] } {
  const [workflow, delegations] = splitTopLevel(record).map((member) => member.slice(member.indexOf(':') + 1));
  const sortedMembers = (object: string): string[] =>
    splitTopLevel(object)
      .map((member) => (member.startsWith('"art":') ? `"art":${sortedMembers(member.slice('"art":'.length)).join(',')}` : member))
      .sort();
  return { workflow: sortedMembers(workflow!), delegations: splitTopLevel(delegations!).map(sortedMembers) };
}

/** The members of a JSON object's (or the elements of an array's) text, split at its own commas. */
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let inString = false;
  let start = 1;
  for (let index = 1; index < text.length - 1; index++) {
    const character = text[index];
    if (inString) {
      if (character === '\\') index++;
      else if (character === '"') inString = false;
    } else if (character === '"') inString = true;
    else if (character === '{' || character === '[') depth++;
    else if (character === '}' || character === ']') depth--;
    else if (character === ',' && depth === 0) {
      parts.push(text.slice(start, index));
      start = index + 1;
    }
  }
  if (text.length > 2) parts.push(text.slice(start, -1));
  return parts;
}

describe('compacted record bytes', () => {
  it('the comparison sees a one-byte change of any member, and not the members\' order', () => {
    expect(membersOf(EXPECTED.replace('"fly \\"there\\" / back"', '"fly \\"there\\" \\/ back"'))).not.toEqual(membersOf(EXPECTED));
    expect(membersOf(EXPECTED.replace('"end":4000', '"end":4001'))).not.toEqual(membersOf(EXPECTED));
    expect(membersOf(EXPECTED.replace('"order:a-T1":"1"', '"order:a-T1":1'))).not.toEqual(membersOf(EXPECTED));
    const reordered = EXPECTED.replace('{"at":1000,"state":"COMPLETED",', '{"state":"COMPLETED","at":1000,');
    expect(reordered).not.toBe(EXPECTED);
    expect(membersOf(reordered)).toEqual(membersOf(EXPECTED));
  });

  it('a fixed two-step workflow (a retried step, another agent, marks, escapes, artifacts) compacts to the same bytes', async () => {
    const id = 'wf-bytes';
    await journal.createWorkflow(id, { state: 'RUNNING', definition: definition(id), createdAt: '1000', label: '007' }, intent(id, 'hotel', 1));
    await journal.createIntent(id, intent(id, 'hotel', 2, { agentCardUrl: 'http://other.example/card.json', createdAt: '1200' }));
    await journal.createIntent(id, intent(id, 'flight', 1, { requestedContextId: 'c-own' }));
    await run({ workflowId: id, delegationId: 'hotel.1' }, 'T1', [{ text: 'no rooms \u0001' }], 'FAILED');
    await run({ workflowId: id, delegationId: 'hotel.2' }, 'T2', [{ text: 'booked "=" ok' }, { data: { mark: '=' } }], 'COMPLETED');
    await run({ workflowId: id, delegationId: 'flight.1' }, 'T3', [{ text: 'flown' }], 'COMPLETED');
    const version = (await journal.getWorkflow(id))!.version;
    await journal.updateWorkflow(id, { state: 'COMPLETED' }, version);

    const record = (await redis().get(journal.keys.finished(id)))!;
    expect(record.length).toBe(EXPECTED.length);
    expect(membersOf(record)).toEqual(membersOf(EXPECTED));
    expect(await redis().hgetall(journal.keys.finishedPushTokens(id))).toEqual({ 'hotel.1': 'secret-hotel', 'hotel.2': 'secret-hotel', 'flight.1': 'secret-flight' });
  });
});

/** The record as updateWorkflow-4.lua wrote it before the script's cost was cut (commit 0301d40). */
const EXPECTED = String.raw`{"workflow":{"at":1000,"state":"COMPLETED","v":4,"label":"007","def":{"workflowId":"=","steps":[{"name":"hotel","agent":"http://agent.example/.well-known/agent-card.json","message":{"text":"book a room"}},{"name":"flight","agent":"http://agent.example/.well-known/agent-card.json","message":{"text":"fly \"there\" / back"}}],"maxAttemptsPerStep":2},"upd":4000},"delegations":[{"pushToken":"secret-hotel","step":"hotel","mid":"m-hotel-1","iface":{"url":"http://agent.example/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"},"sends":1,"smsg":{"messageId":"s-T1","contextId":"=","taskId":"=","role":"ROLE_AGENT","parts":[{"text":"no rooms \u0001"}]},"task":"T1","try":1,"v":6,"msg":{"parts":[{"text":"do hotel é中 / \\ \"q\"\n"}],"metadata":{"durableA2a":"="}},"state":"FAILED","ts":"2026-01-01T00:00:02.5+01:00","end":4000,"ctx":"c-wf-bytes","askCtx":"=","fence":1,"art":{"meta:a-T1":{},"order:a-T1":"1","parts:a-T1":[{"text":"first / "},{"data":{"n":1,"s":"="}}]}},{"pushToken":"secret-hotel","card":"http://other.example/card.json","step":"hotel","mid":"m-hotel-2","at":200,"iface":{"url":"http://agent.example/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"},"sends":1,"smsg":"{\"messageId\":\"s-T2\",\"contextId\":\"c-wf-bytes\",\"taskId\":\"T2\",\"role\":\"ROLE_AGENT\",\"parts\":[{\"text\":\"booked \\\"=\\\" ok\"},{\"data\":{\"mark\":\"=\"}}]}","task":"T2","try":2,"v":6,"msg":{"parts":[{"text":"do hotel é中 / \\ \"q\"\n"}],"metadata":{"durableA2a":"="}},"state":"COMPLETED","ts":"2026-01-01T00:00:02.5+01:00","end":4000,"ctx":"c-wf-bytes","askCtx":"=","fence":1,"art":{"order:a-T2":"1","parts:a-T2":[{"text":"first / "},{"data":{"n":1,"s":"="}}],"meta:a-T2":{}}},{"pushToken":"secret-flight","step":"flight","mid":"m-flight-1","iface":{"url":"http://agent.example/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"},"sends":1,"smsg":{"messageId":"s-T3","contextId":"=","taskId":"=","role":"ROLE_AGENT","parts":[{"text":"flown"}]},"task":"T3","try":1,"v":6,"msg":{"parts":[{"text":"do flight é中 / \\ \"q\"\n"}],"metadata":{"durableA2a":"="}},"state":"COMPLETED","ts":"2026-01-01T00:00:02.5+01:00","end":4000,"ctx":"c-wf-bytes","askCtx":"c-own","fence":1,"art":{"parts:a-T3":[{"text":"first / "},{"data":{"n":1,"s":"="}}],"meta:a-T3":{},"order:a-T3":"1"}}]}`;
