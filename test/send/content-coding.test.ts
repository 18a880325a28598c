/**
 * Attack: an agent (or the proxy in front of it) that compresses every answer whatever the request said
 * (docs/a2a-edge.md "Content codings"). Read as raw bytes, its SendMessage answer was "not JSON": delivered, effect
 * maybe, so the search ran, and its ListTasks answer was unreadable too: every delegation to it ended with a person
 * although the agent had completed the work. Real redis-server, real fleet, a scripted raw JSON-RPC agent whose
 * answers are gzip / deflate / br bytes. The kind's property is in packages/a2a/test/content-coding.test.ts.
 */
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { expectCompletedWith, useFieldCases } from '../harness/field-cases.ts';
import { task, type ScriptedAnswer } from '../harness/scripted-agent.ts';

const h = useFieldCases();

/** `raw deflate`: RFC 1951 without the zlib wrapper, sent as `Content-Encoding: deflate` as some servers do. */
const ENCODE = { gzip: zlib.gzipSync, deflate: zlib.deflateSync, 'raw deflate': zlib.deflateRawSync, br: zlib.brotliCompressSync } as const;
type Coding = keyof typeof ENCODE;

/** A JSON-RPC success with `result`, its body in `coding`. */
const encoded = (coding: Coding, id: unknown, result: unknown): ScriptedAnswer => ({
  http: { status: 200, body: ENCODE[coding](Buffer.from(JSON.stringify({ jsonrpc: '2.0', id, result }))), headers: { 'content-encoding': coding === 'raw deflate' ? 'deflate' : coding } },
});

describe('a delegation to an agent that compresses every answer', () => {
  for (const coding of Object.keys(ENCODE) as Coding[]) {
    it(`SendMessage answers a COMPLETED task in ${coding}: COMPLETED with its artifact, one SendMessage`, async () => {
      const { producer, agent, id } = await h.setUpAndDelegate(() => ({
        SendMessage: (params, call) => encoded(coding, call.id, { task: task('T1', 'COMPLETED', { contextId: params.message.contextId, history: [params.message], artifacts: { a1: 'booked' } }) }),
      }));
      await expectCompletedWith(producer, id, 'T1', 'booked');
      expect(agent.count('SendMessage')).toBe(1);
    }, 45_000);
  }

  it('SendMessage answers WORKING and GetTask answers COMPLETED, both in gzip (no stream): COMPLETED, one SendMessage', async () => {
    let history: unknown[] = [];
    const { producer, agent, id } = await h.setUpAndDelegate(() => ({
      SendMessage: (params, call) => ((history = [params.message]), encoded('gzip', call.id, { task: task('T1', 'WORKING', { contextId: params.message.contextId, history }) })),
      SubscribeToTask: () => ({ error: { code: -32004, message: 'streaming is not supported' } }),
      GetTask: (_params, call) => encoded('gzip', call.id, task('T1', 'COMPLETED', { history: history as never, artifacts: { a1: 'booked' } })),
    }));
    await expectCompletedWith(producer, id, 'T1', 'booked');
    expect(agent.count('SendMessage')).toBe(1);
  }, 45_000);

  it('crash window 2 (sent, never recorded): the search reads a gzip ListTasks and GetTask, adopts the task, never sends again', async () => {
    let messageId = '';
    const history = () => [{ messageId, role: 'ROLE_USER', parts: [{ text: 'go' }] }];
    const agent = await h.agentWith({
      ListTasks: (params, call) => encoded('gzip', call.id, { tasks: [task('T1', 'COMPLETED', { contextId: params.contextId, history: history() })], nextPageToken: '', pageSize: 50, totalSize: 1 }),
      GetTask: (_params, call) => encoded('br', call.id, task('T1', 'COMPLETED', { history: history(), artifacts: { a1: 'the booking' } })),
    });
    const { producer, id } = await h.sentNotRecorded(agent, (ours) => (messageId = ours));
    await expectCompletedWith(producer, id, 'T1', 'the booking');
    expect(agent.count('SendMessage')).toBe(0);
  }, 45_000);
});
