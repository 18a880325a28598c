/**
 * `ChunkReader` (sse.ts): the idle watchdog and the abort bound of each chunk read, with one timer and one abort
 * listener per read instead of one per chunk. Chunks come from a controllable iterator; time is vitest's fake clock.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { StreamIdleError } from '../src/errors.ts';
import { MAX_TIMER_DELAY_MS } from '../src/long-timer.ts';
import { ChunkReader, readServerSentEvents } from '../src/sse.ts';

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

/** An async iterator whose `next` waits until the test pushes a chunk, ends it, or fails it. */
function controlledChunks() {
  const waiting: { resolve(result: IteratorResult<string>): void; reject(error: unknown): void }[] = [];
  const iterator: AsyncIterator<string> = { next: () => new Promise((resolve, reject) => waiting.push({ resolve, reject })) };
  return {
    iterator,
    push: (value: string) => waiting.shift()!.resolve({ value, done: false }),
    end: () => waiting.shift()!.resolve({ value: undefined, done: true }),
    fail: (error: unknown) => waiting.shift()!.reject(error),
  };
}

/** Whether `promise` has settled by now (after the microtasks queued so far). */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(
    () => (done = true),
    () => (done = true),
  );
  await Promise.resolve();
  await Promise.resolve();
  return done;
}

/** A body of `chunks` as UTF-8 bytes, each chunk handed out on its own. */
async function* bodyOf(chunks: readonly string[]): AsyncGenerator<Uint8Array> {
  for (const chunk of chunks) yield new TextEncoder().encode(chunk);
}

describe('ChunkReader', () => {
  it('gives the chunks in order, then done, with one timer and one abort listener for the whole read', async () => {
    const setTimer = vi.spyOn(globalThis, 'setTimeout');
    const signal = new AbortController().signal;
    const addListener = vi.spyOn(signal, 'addEventListener');
    const removeListener = vi.spyOn(signal, 'removeEventListener');
    await fc.assert(
      fc.asyncProperty(fc.array(fc.string(), { maxLength: 30 }), async (chunks) => {
        setTimer.mockClear();
        addListener.mockClear();
        removeListener.mockClear();
        const source = controlledChunks();
        const reader = new ChunkReader(source.iterator, 60_000, signal, 'test');
        const read: string[] = [];
        for (const chunk of chunks) {
          const next = reader.next();
          source.push(chunk);
          const result = await next;
          expect(result.done).toBe(false);
          read.push(result.value as string);
        }
        const last = reader.next();
        source.end();
        expect((await last).done).toBe(true);
        reader.close();
        expect(read).toEqual(chunks);
        expect(setTimer).toHaveBeenCalledTimes(1);
        expect(addListener).toHaveBeenCalledTimes(1);
        expect(removeListener).toHaveBeenCalledTimes(1);
      }),
      { numRuns: 50 },
    );
  });

  it('fails a read that waits idleTimeoutMs for a chunk, drops the late chunk, and counts only the time a read waits', async () => {
    vi.useFakeTimers();
    const source = controlledChunks();
    const reader = new ChunkReader(source.iterator, 1_000, undefined, 'agent');
    const first = reader.next();
    vi.advanceTimersByTime(900);
    source.push('a');
    expect(await first).toEqual({ value: 'a', done: false });
    // The consumer takes longer than the watchdog between reads: no read waits, nothing fails.
    vi.advanceTimersByTime(5_000);
    const second = reader.next();
    vi.advanceTimersByTime(900);
    source.push('b');
    expect(await second).toEqual({ value: 'b', done: false });
    const third = reader.next();
    const failure = third.catch((error: unknown) => error);
    vi.advanceTimersByTime(1_000);
    expect(await failure).toBeInstanceOf(StreamIdleError);
    expect(((await failure) as Error).message).toBe('no bytes for 1000 ms from agent');
    source.push('late');
    await Promise.resolve();
    reader.close();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a stream idle for exactly 2^31 ms (past the timer range) is closed once, at that time, and not before', async () => {
    vi.useFakeTimers();
    const source = controlledChunks();
    let destroyed = 0;
    const body = { [Symbol.asyncIterator]: () => source.iterator as AsyncIterator<Uint8Array>, destroy: () => void destroyed++ };
    const idleTimeoutMs = 2 ** 31;
    const reading = (async () => {
      for await (const message of readServerSentEvents(body, { idleTimeoutMs, source: 'agent' })) void message;
    })().catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(idleTimeoutMs - 1);
    expect(await settled(reading)).toBe(false);
    expect(destroyed).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    const failure = await reading;
    expect(failure).toBeInstanceOf(StreamIdleError);
    expect((failure as Error).message).toBe(`no bytes for ${idleTimeoutMs} ms from agent`);
    await vi.advanceTimersByTimeAsync(4 * MAX_TIMER_DELAY_MS);
    expect(destroyed).toBe(1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('property: each read fails after exactly idleTimeoutMs of waiting, in the timer range and past it; one timer in the range', async () => {
    vi.useFakeTimers();
    const setTimer = vi.spyOn(globalThis, 'setTimeout');
    const idleTimeouts = fc.oneof(fc.integer({ min: 1, max: 4 * MAX_TIMER_DELAY_MS }), fc.constantFrom(1, MAX_TIMER_DELAY_MS, MAX_TIMER_DELAY_MS + 1, 2 ** 31, 2 * MAX_TIMER_DELAY_MS, 2 * MAX_TIMER_DELAY_MS + 1));
    await fc.assert(
      fc.asyncProperty(idleTimeouts, fc.array(fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }), { maxLength: 6 }), async (idleTimeoutMs, gaps) => {
        setTimer.mockClear();
        const source = controlledChunks();
        const reader = new ChunkReader(source.iterator, idleTimeoutMs, undefined, 'agent');
        for (const [index, gap] of gaps.entries()) {
          const read = reader.next();
          await vi.advanceTimersByTimeAsync(Math.floor(gap * idleTimeoutMs));
          source.push(`chunk ${index}`);
          expect(await read).toEqual({ value: `chunk ${index}`, done: false });
          expect(vi.getTimerCount()).toBeLessThanOrEqual(1);
          // Between reads the watchdog may run out: no read waits, nothing fails.
          await vi.advanceTimersByTimeAsync(idleTimeoutMs);
        }
        const last = reader.next();
        await vi.advanceTimersByTimeAsync(idleTimeoutMs - 1);
        expect(await settled(last)).toBe(false);
        await vi.advanceTimersByTimeAsync(1);
        await expect(last).rejects.toBeInstanceOf(StreamIdleError);
        if (idleTimeoutMs <= MAX_TIMER_DELAY_MS) expect(setTimer).toHaveBeenCalledTimes(1);
        reader.close();
        expect(vi.getTimerCount()).toBe(0);
      }),
      { numRuns: 100 },
    );
  });

  it('rejects the waiting read with the abort reason, and a read after the abort at once', async () => {
    const source = controlledChunks();
    const controller = new AbortController();
    const reader = new ChunkReader(source.iterator, 60_000, controller.signal, 'agent');
    const first = reader.next();
    source.push('a');
    await first;
    const second = reader.next();
    controller.abort(new Error('stop'));
    await expect(second).rejects.toThrow('stop');
    await expect(reader.next()).rejects.toThrow('stop');
    source.fail(new Error('socket closed'));
    reader.close();
  });

  it('turns an error of the iterator into a NetworkError of the read', async () => {
    const source = controlledChunks();
    const reader = new ChunkReader(source.iterator, 0, undefined, 'agent');
    const read = reader.next();
    source.fail(Object.assign(new Error('reset'), { code: 'ECONNRESET' }));
    await expect(read).rejects.toMatchObject({ code: 'NETWORK_ERROR' });
    reader.close();
  });
});

describe('readServerSentEvents through ChunkReader', () => {
  it('reads the same events whatever the chunking, and leaves no timer behind', async () => {
    const text = 'event: a\ndata: {"x":1}\n\n: keep-alive\n\ndata: two\nid: 7\n\n';
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(fc.integer({ min: 1, max: text.length - 1 }), { maxLength: 12 }), async (cuts) => {
        const bounds = [0, ...[...cuts].sort((a, b) => a - b), text.length];
        const chunks = bounds.slice(1).map((end, index) => text.slice(bounds[index], end));
        const messages = [];
        for await (const message of readServerSentEvents(bodyOf(chunks), { idleTimeoutMs: 60_000 })) messages.push(message);
        expect(messages).toEqual([
          { event: 'a', data: '{"x":1}', lastEventId: undefined },
          { event: undefined, data: 'two', lastEventId: '7' },
        ]);
      }),
      { numRuns: 50 },
    );
  });
});
