/**
 * CPU time of any process on this machine from `/proc/<pid>/stat` (Linux): user + system time of all its
 * threads plus that of its waited-for children (fields 14–17), in microseconds. Works for processes that are
 * not Node (redis-server, restate-server) and needs nothing from them. Resolution is one clock tick
 * (`getconf CLK_TCK`, usually 10 ms), so it is read around whole rounds, not single delegations.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let ticksPerSecond: number | undefined;

function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/** CPU microseconds `pid` has used so far; 0 when the process is gone (a SIGKILLed worker). */
export function processCpuMicros(pid: number): number {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return 0;
  }
  // The command name (field 2) is in parentheses and may hold spaces: count fields after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = [11, 12, 13, 14].reduce((sum, index) => sum + Number(fields[index] ?? 0), 0);
  return (ticks / clockTicks()) * 1e6;
}

/** Sum of `processCpuMicros` over `pids`. */
export const totalCpuMicros = (pids: readonly number[]): number => pids.reduce((sum, pid) => sum + processCpuMicros(pid), 0);
