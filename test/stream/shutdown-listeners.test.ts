/**
 * The fleet's close reaches every open stream through one listener on the shutdown signal (`shutdown-listeners.ts`):
 * an add and a removal are O(1), where one EventTarget listener per stream made each stream's opening cost O(open
 * streams) (Node's duplicate check). Each listener runs once, in order of adding; a removed one never runs; one added
 * after the close runs at once.
 */
import { describe, expect, it } from 'vitest';
import type { DelegationRecord } from '@durable-a2a/shared';
import type { JobRun, WorkerContext } from '../../packages/workers/src/context.ts';
import { readStream } from '../../packages/workers/src/delegation/io/stream.ts';
import { ShutdownListeners } from '../../packages/workers/src/shutdown-listeners.ts';

describe('shutdown listeners', () => {
  it('calls each listener still added once at the close, in order; a removed one never', () => {
    const shutdown = new AbortController();
    const listeners = new ShutdownListeners(shutdown.signal);
    const calls: string[] = [];
    listeners.add(() => calls.push('a'));
    const removeB = listeners.add(() => calls.push('b'));
    const c = () => calls.push('c');
    listeners.add(c);
    const removeSecondC = listeners.add(c);
    removeB();
    removeSecondC();
    removeSecondC();
    shutdown.abort();
    shutdown.abort();
    expect(calls).toEqual(['a', 'c']);
  });

  it('calls a listener added after the close at once; its removal is a no-op', () => {
    const shutdown = new AbortController();
    const listeners = new ShutdownListeners(shutdown.signal);
    shutdown.abort();
    let called = 0;
    const remove = listeners.add(() => called++);
    remove();
    expect(called).toBe(1);
  });

  it('a listener that adds another during the close: the new one runs at once', () => {
    const shutdown = new AbortController();
    const listeners = new ShutdownListeners(shutdown.signal);
    const calls: string[] = [];
    listeners.add(() => {
      calls.push('first');
      listeners.add(() => calls.push('added during the close'));
    });
    shutdown.abort();
    expect(calls).toEqual(['first', 'added during the close']);
  });

  it('a stream that fails to open leaves no listener waiting for the close (each failure would hold one until then)', async () => {
    const shutdown = new AbortController();
    const listeners = new ShutdownListeners(shutdown.signal);
    // What readStream reads before the stream is open; the open itself fails (as transportFor does without an
    // interface or an Agent Card).
    const ctx = {
      logger: { child: () => ({}) },
      options: { streamQuietMs: 60_000 },
      shutdownSignal: shutdown.signal,
      shutdownListeners: listeners,
    } as unknown as WorkerContext;
    const record = { workflowId: 'wf', delegationId: 'd', step: 0, taskId: 'task' } as unknown as DelegationRecord;
    const failures = 5;
    for (let attempt = 0; attempt < failures; attempt++) {
      const opening = readStream(ctx, record, { id: `job-${attempt}` } as JobRun, new AbortController().signal, async () => ({ next: 'nothing' }) as never, {
        open: () => {
          throw new Error('no interface to open a stream on');
        },
      });
      await expect(opening).rejects.toThrow('no interface to open a stream on');
    }
    expect(listeners.size).toBe(0);
  });
});

