/**
 * Property (overstatus35, kind: an answer over a limit read as if whole): a COMPLETED task that holds no artifacts
 * carries its result in its final status message (the view's `resultText`), so a status message over
 * `statusMessageBytes` there ends the attempt AMBIGUOUS with a permanent LIMIT_EXCEEDED (`statusMessageBytes`, delivery
 * received), the excerpt kept (bounded, flagged as cut), never COMPLETED with part of its result; with an artifact
 * (a Task's list, or a stream's update before the status) the status message is not the result: COMPLETED, the excerpt
 * only; any other state keeps its state (the excerpt only); a message that fits is kept whole. Over state × artifacts
 * 0/1 × message size in/over × channel, every channel a terminal status reaches the journal by: a send's answer or a
 * GetTask (a Task snapshot), a push (a Task event), a stream (artifact update, then the status update: one by one or
 * as the pair), the one-step finish (finishStep: event, pair, snapshot). Real redis-server, the journal's own scripts.
 * The end-to-end case: test/saga/answer-judging-35.test.ts (overstatus35).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Journal, applyStreamResponse, applyStreamResponsePair, applyTask, statusMessageCut, type StatusChange } from '@durable-a2a/shared';
import type { Message, StreamResponse, Task } from '@durable-a2a/a2a';
import { useRedisClient, useRedisServer } from '../harness/redis.ts';
import { finishPatchOf, setUpOneStep } from '../harness/finish-step.ts';

const redisServer = useRedisServer();
const redis = useRedisClient(redisServer);
const LIMIT = 2_048;

const CHANNELS = ['send-or-read', 'push', 'stream', 'stream-pair', 'finish-event', 'finish-pair', 'finish-snapshot'] as const;
type Channel = (typeof CHANNELS)[number];
const STATES = ['COMPLETED', 'FAILED', 'REJECTED', 'CANCELED', 'WORKING'] as const;
const WIRE: Record<(typeof STATES)[number], string> = {
  COMPLETED: 'TASK_STATE_COMPLETED',
  FAILED: 'TASK_STATE_FAILED',
  REJECTED: 'TASK_STATE_REJECTED',
  CANCELED: 'TASK_STATE_CANCELED',
  WORKING: 'TASK_STATE_WORKING',
};

describe('property: a COMPLETED task whose status message is its result and over statusMessageBytes ends AMBIGUOUS LIMIT_EXCEEDED', () => {
  it('state × artifacts 0/1 × message size in/over × channel', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...STATES),
        fc.constantFrom(0, 1),
        fc.constantFrom<'in' | 'over'>('in', 'over'),
        fc.constantFrom<Channel>(...CHANNELS),
        fc.integer({ min: 0, max: 3_000 }),
        async (state, artifacts, size, channel, extra) => {
          // Finished only through the one-step finish (it takes a finished state).
          if (channel.startsWith('finish') && state === 'WORKING') return;
          const journal = new Journal(redis(), { prefix: `srl${++run}`, retentionMs: 60_000, statusMessageBytes: LIMIT });
          const workflowId = `wf${run}`;
          const { ref, fence, held, workflow } = await setUpOneStep(journal, workflowId, { contextId: false, lease: false, before: 'working' });
          const text = size === 'in' ? 'x'.repeat(200 + (extra % 1_500)) : 'y'.repeat(LIMIT + extra);
          const message: Message = { messageId: 'sm-final', role: 'ROLE_AGENT', taskId: 't-1', contextId: 'c-1', parts: [{ text }] };
          const artifact = { artifactId: 'a1', parts: [{ text: 'booked' }] };
          const listed = artifacts ? [artifact] : [];
          const taskOf = (): Task => ({ id: 't-1', contextId: 'c-1', status: { state: WIRE[state], message }, artifacts: listed } as unknown as Task);
          const statusUpdate = { taskId: 't-1', contextId: 'c-1', status: { state: WIRE[state], message } };
          const artifactUpdate = { taskId: 't-1', contextId: 'c-1', artifact, lastChunk: true };
          const record = { ...held, taskId: 't-1' };
          let after = undefined as Awaited<ReturnType<Journal['getDelegation']>>;
          switch (channel) {
            case 'send-or-read':
              await applyTask(journal, ref, taskOf(), { snapshot: true, fence });
              break;
            case 'push':
              await applyStreamResponse(journal, record, { task: taskOf() } as StreamResponse);
              break;
            case 'stream':
              if (artifacts) await applyStreamResponse(journal, record, { artifactUpdate } as StreamResponse, { fence });
              await applyStreamResponse(journal, record, { statusUpdate } as StreamResponse, { fence });
              break;
            case 'stream-pair':
              if (artifacts) await applyStreamResponsePair(journal, record, [{ artifactUpdate }, { statusUpdate }] as never, { fence });
              else await applyStreamResponse(journal, record, { statusUpdate } as StreamResponse, { fence });
              break;
            default: {
              const shape = channel === 'finish-snapshot' ? 'snapshot' : 'event';
              const change: StatusChange = { fence, mode: shape, state, taskId: 't-1', statusMessage: message, held, ...(shape === 'snapshot' ? { artifacts: listed } : {}) };
              const pair = channel === 'finish-pair' && artifacts ? { fence, update: { artifact, lastChunk: true } } : undefined;
              // A lone event after an artifact: the stream's update stored first (the row the worker holds then).
              if (channel === 'finish-event' && artifacts) {
                await journal.applyArtifact(ref, fence, { artifact, lastChunk: true });
                change.held = (await journal.getDelegation(ref))!;
              }
              const outcome = await journal.finishStep(ref, change, { workflow, patch: finishPatchOf(state as 'COMPLETED') }, pair);
              after = outcome.finished ? outcome.record : undefined;
            }
          }
          after ??= await journal.getDelegation(ref);
          const row = after!;
          const kept = row.statusMessage!;
          expect(kept, channel).toBeDefined();
          expect(Buffer.byteLength(JSON.stringify(kept))).toBeLessThanOrEqual(LIMIT);
          if (size === 'in') expect(kept).toEqual(message);
          else expect(statusMessageCut(kept)?.bytes).toBe(Buffer.byteLength(JSON.stringify(message)));
          if (size === 'over' && state === 'COMPLETED' && artifacts === 0) {
            expect(row).toMatchObject({ state: 'AMBIGUOUS', error: { code: 'LIMIT_EXCEEDED', limit: 'statusMessageBytes', retryable: false, delivery: 'received' } });
            expect(row.error!.message).toContain(String(LIMIT));
          } else {
            expect(row.state).toBe(state);
            if (state === 'COMPLETED') expect(row.error).toBeUndefined();
          }
        },
      ),
      {
        numRuns: 150,
        examples: [
          ['COMPLETED', 0, 'over', 'send-or-read', 100],
          ['COMPLETED', 0, 'over', 'stream', 100],
          ['COMPLETED', 0, 'over', 'push', 100],
          ['COMPLETED', 0, 'over', 'finish-event', 100],
          ['COMPLETED', 1, 'over', 'finish-pair', 100],
          ['COMPLETED', 1, 'over', 'stream', 100],
        ],
      },
    );
  }, 120_000);
});
