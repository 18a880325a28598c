/**
 * Summarises a V8 `.cpuprofile` (as `PEERS_CPU_PROF` writes them): the top functions by self and by inclusive share
 * of the busy samples (idle left out), and the same by module (a package of node_modules, or a file of ours).
 *
 *   pnpm tsx bench/cpuprofile-top.ts <file.cpuprofile> [skip fraction, default 0.3] [rows, default 30] [from µs] [to µs]
 *
 * The first `skip` fraction of the samples is left out as start-up (module loading, JIT warm-up). With `from` and `to`
 * (microseconds of the monotonic clock the profile's `startTime` is on, `process.hrtime.bigint() / 1000n` in any
 * process on the machine: `bench/profile-recovery.ts` prints the window from the fresh worker's ready to its last
 * reattach), only the samples taken in that window count and `skip` is not used: the start-up and the fleet's close
 * after the aid's SIGTERM (every stream aborted, 12 % of a 2,000-record profile's busy samples) are left out.
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  /** Microseconds, monotonic clock. */
  startTime: number;
  /** Microseconds from the sample before (the first: from `startTime`). */
  timeDeltas: number[];
}

const [file, skipText = '0.3', rowsText = '30', fromText, toText] = process.argv.slice(2);
if (!file) throw new Error('usage: cpuprofile-top.ts <file.cpuprofile> [skip] [rows]');
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const rows = Number(rowsText);

const byId = new Map<number, ProfileNode>();
const parent = new Map<number, number>();
for (const node of profile.nodes) {
  byId.set(node.id, node);
  for (const child of node.children ?? []) parent.set(child, node.id);
}

function moduleOf(url: string): string {
  if (url === '') return '(native)';
  const modules = url.lastIndexOf('node_modules/');
  if (modules >= 0) {
    const rest = url.slice(modules + 'node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  if (url.startsWith('node:')) return 'node:internals';
  const ours = url.match(/(packages\/[^/]+\/(?:src|dist)\/.*)$/);
  return ours ? ours[1]! : url.replace(/^file:\/\//, '');
}
function functionOf(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  const where = url === '' ? '' : ` ${moduleOf(url)}:${lineNumber + 1}`;
  return `${functionName || '(anonymous)'}${where}`;
}

/** The samples in the window `from`–`to` (µs), else all but the first `skip` fraction. */
function samplesCounted(): number[] {
  if (fromText === undefined || toText === undefined) return profile.samples.slice(Math.floor(profile.samples.length * Number(skipText)));
  const [from, to] = [Number(fromText), Number(toText)];
  let at = profile.startTime;
  return profile.samples.filter((_, index) => {
    at += profile.timeDeltas[index]!;
    return at >= from && at <= to;
  });
}
const samples = samplesCounted();
const selfFn = new Map<string, number>();
const selfModule = new Map<string, number>();
const inclusiveFn = new Map<string, number>();
const inclusiveModule = new Map<string, number>();
let busy = 0;
const add = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);
for (const id of samples) {
  const leaf = byId.get(id)!;
  if (leaf.callFrame.functionName === '(idle)') continue;
  busy++;
  add(selfFn, functionOf(leaf));
  add(selfModule, moduleOf(leaf.callFrame.url));
  const seenFn = new Set<string>();
  const seenModule = new Set<string>();
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
    const node = byId.get(at)!;
    const fn = functionOf(node);
    if (!seenFn.has(fn)) (seenFn.add(fn), add(inclusiveFn, fn));
    const mod = moduleOf(node.callFrame.url);
    if (!seenModule.has(mod)) (seenModule.add(mod), add(inclusiveModule, mod));
  }
}

function print(title: string, map: Map<string, number>): void {
  console.log(`\n${title}`);
  for (const [key, count] of [...map].sort((a, b) => b[1] - a[1]).slice(0, rows)) {
    console.log(`${((100 * count) / busy).toFixed(1).padStart(6)} %  ${key}`);
  }
}
console.log(`${file}: ${busy} busy samples of ${samples.length} (${fromText === undefined || toText === undefined ? `first ${skipText} left out` : `from ${fromText} to ${toText} µs`})`);
print('self, by function', selfFn);
print('self, by module', selfModule);
print('inclusive, by function', inclusiveFn);
print('inclusive, by module', inclusiveModule);
