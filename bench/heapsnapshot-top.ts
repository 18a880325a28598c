/**
 * Summarises a V8 `.heapsnapshot` (as `--heapsnapshot-signal` writes them; `BENCH_FOOTPRINT_WORKER_NODE_ARGS` of the
 * footprint bench): the self sizes of every object summed by constructor name (objects, closures by function name,
 * strings, arrays, code, …), the largest first, with their counts; divided by `per` (e.g. the open streams) too.
 *
 *   pnpm tsx bench/heapsnapshot-top.ts <file.heapsnapshot> [rows, default 40] [per, default 1]
 */
import { readFileSync } from 'node:fs';

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

const [file, rowsText = '40', perText = '1'] = process.argv.slice(2);
if (!file) throw new Error('usage: heapsnapshot-top.ts <file.heapsnapshot> [rows] [per]');
const heap = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
const fields = heap.snapshot.meta.node_fields;
const types = heap.snapshot.meta.node_types[0];
const [typeAt, nameAt, sizeAt] = [fields.indexOf('type'), fields.indexOf('name'), fields.indexOf('self_size')];
const byName = new Map<string, { bytes: number; count: number }>();
let total = 0;
for (let index = 0; index < heap.nodes.length; index += fields.length) {
  const type = types[heap.nodes[index + typeAt]!]!;
  const name = heap.strings[heap.nodes[index + nameAt]!]!;
  const bytes = heap.nodes[index + sizeAt]!;
  // Strings and numbers by their type (their names are their values); objects, closures and the rest by name.
  const key = type === 'string' || type === 'concatenated string' || type === 'sliced string' || type === 'number' || type === 'code' ? `(${type})` : `${type} ${name.slice(0, 60)}`;
  const entry = byName.get(key) ?? { bytes: 0, count: 0 };
  entry.bytes += bytes;
  entry.count++;
  byName.set(key, entry);
  total += bytes;
}
const per = Number(perText);
console.log(`${file}: ${(total / 2 ** 20).toFixed(1)} MiB in ${heap.nodes.length / fields.length} objects${per > 1 ? `, ${Math.round(total / per)} bytes per ${per}th` : ''}`);
for (const [key, { bytes, count }] of [...byName].sort((a, b) => b[1].bytes - a[1].bytes).slice(0, Number(rowsText))) {
  console.log(`${(bytes / 2 ** 20).toFixed(2).padStart(9)} MiB ${String(count).padStart(9)}  ${per > 1 ? `${(bytes / per).toFixed(0).padStart(7)} B ${(count / per).toFixed(1).padStart(6)} /per  ` : ''}${key}`);
}
