/**
 * A timer a test fires by hand, in the shape of `WaitTimer` (packages/workers `runs/working-write.ts`): arming it
 * replaces the wait armed before; the function it returns cancels the wait. No clock runs: `fire()` runs the armed wait
 * (if any) once, `pending()` tells whether one is armed.
 */
export interface ManualTimer {
  /** The timer to hand to the code under test (`(done, ms) => cancel`; `ms` is ignored). */
  timer: (done: () => void, ms: number) => () => void;
  /** Runs the armed wait now (nothing when none is armed) and disarms it. */
  fire(): void;
  /** True while a wait is armed and neither fired nor cancelled. */
  pending(): boolean;
}

/** A fresh `ManualTimer` with nothing armed. */
export function manualTimer(): ManualTimer {
  let armed: (() => void) | undefined;
  return {
    timer: (done) => {
      armed = done;
      return () => (armed = undefined);
    },
    fire() {
      const done = armed;
      armed = undefined;
      done?.();
    },
    pending: () => armed !== undefined,
  };
}
