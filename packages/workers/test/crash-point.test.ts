import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '@durable-a2a/shared';
import { crashPointHook, NO_FAULT } from '../src/crash-point.ts';
import type { CompiledFleetOptions } from '../src/options.ts';

/** A logger whose lines are kept, parsed. */
function keptLogger() {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)) as Record<string, unknown>);
      done();
    },
  });
  return { logger: createLogger({ level: 'info' }, destination), lines };
}

const faults = (crashAt: string | undefined, stallAt: CompiledFleetOptions['stallAt']) => ({ crashAt, stallAt }) as CompiledFleetOptions;

describe('crashPointHook', () => {
  it('is the shared no-op when no fault is configured (no closure, no check per point)', () => {
    const { logger, lines } = keptLogger();
    const hook = crashPointHook(faults(undefined, undefined), logger);
    expect(hook).toBe(NO_FAULT);
    hook('send.after-mark', 'main');
    expect(lines).toEqual([]);
  });

  it('stalls at the configured point, by name or by point@step, and nowhere else', () => {
    const { logger, lines } = keptLogger();
    const byName = crashPointHook(faults(undefined, { point: 'send.after-mark', ms: 1 }), logger);
    expect(byName).not.toBe(NO_FAULT);
    byName('send.before-mark', 'main');
    byName('send.after-mark', 'main');
    const byStep = crashPointHook(faults(undefined, { point: 'send.after-mark@second', ms: 1 }), logger);
    byStep('send.after-mark', 'main');
    byStep('send.after-mark', 'second');
    logger.flush();
    expect(lines.map((line) => [line.crashPoint, line.msg])).toEqual([
      ['send.after-mark', 'stall point reached: blocking the event loop (fault injection)'],
      ['send.after-mark', 'stall point reached: blocking the event loop (fault injection)'],
    ]);
  });

  it('onCrashPoint alone is told every point with its step, in order, before any fault', () => {
    const { logger, lines } = keptLogger();
    const seen: [string, string | undefined][] = [];
    const hook = crashPointHook({ ...faults(undefined, { point: 'send.after-mark', ms: 1 }), onCrashPoint: (point, step) => void seen.push([point, step]) } as CompiledFleetOptions, logger);
    hook('send.before-mark', 'main');
    hook('send.after-mark');
    logger.flush();
    expect(seen).toEqual([['send.before-mark', 'main'], ['send.after-mark', undefined]]);
    expect(lines).toHaveLength(1);
    const observing = crashPointHook({ ...faults(undefined, undefined), onCrashPoint: () => undefined } as CompiledFleetOptions, logger);
    expect(observing).not.toBe(NO_FAULT);
  });

  it('a crash point alone configured is a hook of its own (it would SIGKILL at that point only)', () => {
    const { logger } = keptLogger();
    expect(crashPointHook(faults('follow.before-stream', undefined), logger)).not.toBe(NO_FAULT);
  });
});
