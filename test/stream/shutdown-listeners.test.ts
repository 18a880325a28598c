/**
 * The fleet's close reaches every open stream through one listener on the shutdown signal (`shutdown-listeners.ts`):
 * an add and a removal are O(1), where one EventTarget listener per stream made each stream's opening cost O(open
 * streams) (Node's duplicate check). Each listener runs once, in order of adding; a removed one never runs; one added
 * after the close runs at once.
 */
import { describe, expect, it } from 'vitest';
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
});
