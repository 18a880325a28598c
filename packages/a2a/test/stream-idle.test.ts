/** Field case R05 (scaled down): quiet streams, keep-alives, our idle watchdog, and undici's bodyTimeout. */
import { Agent, request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { StreamIdleError } from '../src/errors.ts';
import { JsonRpcTransport } from '../src/jsonrpc.ts';
import { drainStream } from '../src/stream.ts';
import { type RawServer, SU, ev, sleep, startRawServer } from './helpers/raw-server.ts';

let server: RawServer | undefined;
const agents: Agent[] = [];
afterEach(async () => {
  await server?.close();
  server = undefined;
  await Promise.all(agents.splice(0).map((agent) => agent.close()));
});

/** A stream server: headers, then `script(write)`; ends the response when the script returns true. */
async function streamServer(script: (write: (text: string) => void) => Promise<boolean>): Promise<RawServer> {
  server = await startRawServer(async (_request, response) => {
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    response.flushHeaders();
    if (await script((text) => response.write(text))) response.end();
  });
  return server;
}

const subscribe = (url: string, options: { idleTimeoutMs: number; dispatcher?: Agent }) =>
  new JsonRpcTransport({ url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }, options).subscribeToTask({ id: 'T1' });

describe('R05 idle watchdog', () => {
  it('one ping then silence -> StreamIdleError (retryable) after the idle timeout', async () => {
    const { url } = await streamServer(async (write) => {
      write(': ping\n\n');
      return false; // stays silent, never ends
    });
    const startedAt = Date.now();
    const failure = await drainStream(subscribe(url, { idleTimeoutMs: 300 }), () => undefined).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(StreamIdleError);
    expect((failure as StreamIdleError).retryable).toBe(true);
    const elapsedMs = Date.now() - startedAt;
    expect(elapsedMs).toBeGreaterThanOrEqual(280);
    expect(elapsedMs).toBeLessThan(2_000);
  });

  it('keep-alives every 50 ms for 2.5 s reset a 1 s watchdog; then COMPLETED -> terminal, 0 errors', async () => {
    const { url } = await streamServer(async (write) => {
      for (let elapsed = 0; elapsed < 2_500; elapsed += 50) {
        write(': keepalive\n\n');
        await sleep(50);
      }
      write(ev(SU('COMPLETED')));
      return true;
    });
    const end = await drainStream(subscribe(url, { idleTimeoutMs: 1_000 }), () => undefined);
    expect(end).toEqual({ kind: 'terminal', lastState: 'TASK_STATE_COMPLETED', eventCount: 1 });
  });

  it('stream requests override a dispatcher bodyTimeout of 200 ms (bodyTimeout: 0)', async () => {
    const { url } = await streamServer(async (write) => {
      write(': ping\n\n');
      // undici runs bodyTimeout on its coarse "fast timer" (about 1 s resolution), so stay
      // silent well past 200 ms + that resolution.
      await sleep(2_500);
      write(ev(SU('COMPLETED')));
      return true;
    });
    const shortBodyTimeout = new Agent({ bodyTimeout: 200 });
    agents.push(shortBodyTimeout);

    // Control: a plain request on that dispatcher is cut by undici (the R05 failure).
    const plain = await request(url, { dispatcher: shortBodyTimeout, method: 'POST', body: '{}' });
    const plainFailure = await plain.body.text().catch((error: unknown) => error);
    expect((plainFailure as { code?: string }).code).toBe('UND_ERR_BODY_TIMEOUT');

    const end = await drainStream(subscribe(url, { idleTimeoutMs: 5_000, dispatcher: shortBodyTimeout }), () => undefined);
    expect(end.kind).toBe('terminal');
  });

  it('after a terminal state, an idle cut ends the stream normally', async () => {
    const { url } = await streamServer(async (write) => {
      write(ev(SU('COMPLETED')));
      return false; // server forgets to close
    });
    const end = await drainStream(subscribe(url, { idleTimeoutMs: 200 }), () => undefined);
    expect(end.kind).toBe('terminal');
  });

  it('an abort signal stops the stream with its reason', async () => {
    const { url } = await streamServer(async (write) => {
      write(': ping\n\n');
      return false;
    });
    const controller = new AbortController();
    const stream = new JsonRpcTransport({ url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }, { idleTimeoutMs: 5_000 }).subscribeToTask(
      { id: 'T1' },
      { signal: controller.signal },
    );
    setTimeout(() => controller.abort(new Error('stop')), 100);
    await expect(drainStream(stream, () => undefined)).rejects.toThrow('stop');
  });
});
