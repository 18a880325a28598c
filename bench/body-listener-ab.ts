/**
 * Same-process A/B of node36's two per-delegation cuts, the old and the new way alternating in batches:
 * - an answer body's text: a fresh streaming `TextDecoder` per body (before) against `utf8TextOf` once the body is
 *   whole (now), for a body of `bytes` in one chunk (the worker's three answers a delegation are 250–700 bytes);
 * - a stream's listener on its lease signal: `addEventListener` with the `signal` option, dropped when the stream's
 *   controller aborts (before), against a listener taken off by `removeEventListener` (now), each with a fresh lease
 *   and controller as a delegation has.
 *
 *   pnpm tsx bench/body-listener-ab.ts [batches 8] [calls a batch 20000] [body bytes 600]
 *
 * Prints ns a call per batch and the medians.
 */
import { utf8TextOf } from '../packages/a2a/src/utf8.ts';

const [batchesText = '8', callsText = '20000', bytesText = '600'] = process.argv.slice(2);
const batches = Number(batchesText);
const calls = Number(callsText);
const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { id: 'task-1', contextId: 'ctx', status: { state: 'TASK_STATE_COMPLETED' }, text: 'x'.repeat(Number(bytesText)) } }).slice(0, Number(bytesText)));

let sink = 0;
const cases: Record<string, () => void> = {
  'body, decoder per body (before)': () => {
    const decoder = new TextDecoder('utf-8');
    sink += (decoder.decode(body, { stream: true }) + decoder.decode()).length;
  },
  'body, utf8TextOf (now)': () => {
    sink += utf8TextOf([body], body.byteLength).length;
  },
  'listener, signal option (before)': () => {
    const lease = new AbortController().signal;
    const controller = new AbortController();
    lease.addEventListener('abort', () => controller.abort(lease.reason), { once: true, signal: controller.signal });
    controller.abort('finished');
  },
  'listener, removed by hand (now)': () => {
    const lease = new AbortController().signal;
    const controller = new AbortController();
    const onLost = () => controller.abort(lease.reason);
    lease.addEventListener('abort', onLost, { once: true });
    lease.removeEventListener('abort', onLost);
    controller.abort('finished');
  },
};

const results: Record<string, number[]> = Object.fromEntries(Object.keys(cases).map((name) => [name, []]));
for (let batch = -1; batch < batches; batch++) {
  const names = batch % 2 === 0 ? Object.keys(cases) : Object.keys(cases).reverse();
  for (const name of names) {
    const run = cases[name]!;
    const start = process.hrtime.bigint();
    for (let call = 0; call < calls; call++) run();
    const ns = Number(process.hrtime.bigint() - start) / calls;
    if (batch >= 0) results[name]!.push(ns);
  }
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
for (const [name, values] of Object.entries(results)) {
  console.log(`${name}: median ${median(values).toFixed(0)} ns, min ${Math.min(...values).toFixed(0)} ns (batches ${values.map((value) => value.toFixed(0)).join(' ')})`);
}
if (sink < 0) console.log(sink);
