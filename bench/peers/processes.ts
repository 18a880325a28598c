/**
 * Process plumbing of the peers benchmark: signals to every process of a side, kills that wait for the exit,
 * and the detached processes to kill when the benchmark exits.
 */
import type { ChildProcess } from 'node:child_process';

/** Detached processes that do not quit by themselves when this process exits: SIGKILLed then. */
const orphans = new Set<ChildProcess>();
let exitHooked = false;

/**
 * Kills `child` when this process exits (until `child` exits first), also on Ctrl+C or SIGTERM: a detached
 * child gets neither signal from the terminal, and a SIGSTOPped one could not even see its IPC channel close.
 */
export function killOnExit(child: ChildProcess): void {
  if (!exitHooked) {
    exitHooked = true;
    process.once('exit', () => {
      for (const orphan of orphans) orphan.kill('SIGKILL');
    });
    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));
  }
  orphans.add(child);
  child.once('exit', () => orphans.delete(child));
}

/** SIGKILL, then resolves once the process is gone. */
export async function killHard(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGKILL');
  await exited;
}

/** SIGTERM (a durable-a2a worker closes within DA2A_CLOSE_TIMEOUT_MS, 10 s by default), SIGKILL after 15 s. */
export async function stopGracefully(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

/** Sends `signal` to each of `pids`; a process already gone is skipped (and pid 0, which would be our own group). */
export function signalAll(pids: () => number[], signal: NodeJS.Signals): void {
  for (const pid of pids().filter((candidate) => candidate > 0)) {
    try {
      process.kill(pid, signal);
    } catch {
      // gone already
    }
  }
}
