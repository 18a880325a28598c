/**
 * Why content-coding.ts is not undici's `interceptors.decompress` (docs/a2a-edge.md "Content codings": the
 * evaluation). The interceptor of our pinned undici, set as we would need it (`skipErrorResponses: false`: our envelope
 * inside a 5xx; `maxSize`: decoded bytes), against the gate of content-coding.test.ts and coding-edges.test.ts. Each
 * case pins one requirement it fails, beside our client meeting it. When an undici upgrade changes one of these, this
 * file fails: evaluate again.
 */
import type { ServerResponse } from 'node:http';
import zlib from 'node:zlib';
import { Agent, interceptors, request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_CONTENT_CODINGS } from '../src/content-coding.ts';
import { ProtocolError } from '../src/errors.ts';
import { createHttpClient } from '../src/http.ts';
import { type RawServer, startRawServer } from './helpers/raw-server.ts';

let server: RawServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const json = Buffer.from('{"a":1}');
const serve = async (status: number, headers: Record<string, string | number>, body: Buffer) => {
  server = await startRawServer((_request, response: ServerResponse) => {
    response.writeHead(status, headers);
    response.end(body);
  });
  return server.url;
};

/** What undici's interceptor gives: the status and the body text, or the error (its class name and code). */
async function viaInterceptor(url: string): Promise<{ status?: number; text?: string; error?: string }> {
  const dispatcher = new Agent().compose(interceptors.decompress({ skipErrorResponses: false, maxSize: 1024 * 1024 }));
  try {
    const response = await request(url, { dispatcher });
    return await response.body.text().then(
      (text) => ({ status: response.statusCode, text }),
      (error: Error & { code?: string }) => ({ status: response.statusCode, error: error.code ?? error.constructor.name }),
    );
  } catch (error) {
    return { error: (error as Error & { code?: string }).code ?? (error as Error).message };
  } finally {
    await dispatcher.close();
  }
}

const viaOurs = (url: string) => createHttpClient().request({ method: 'GET', url }).then((response) => response, (error: unknown) => error);

describe('undici interceptors.decompress against the content-coding gate', () => {
  it('an unknown coding passes through undecoded as a 200 (no typed refusal); ours: ProtocolError, delivery received', async () => {
    const url = await serve(200, { 'content-type': 'application/json', 'content-encoding': 'snappy' }, json);
    expect(await viaInterceptor(url)).toEqual({ status: 200, text: '{"a":1}' });
    expect(await viaOurs(url)).toBeInstanceOf(ProtocolError);
  });

  it(`its cap on layers is a fixed 5, not configurable: three gzip layers are read; ours stops past ${MAX_CONTENT_CODINGS}`, async () => {
    const url = await serve(200, { 'content-encoding': 'gzip, gzip, gzip' }, zlib.gzipSync(zlib.gzipSync(zlib.gzipSync(json))));
    expect(await viaInterceptor(url)).toEqual({ status: 200, text: '{"a":1}' });
    expect(await viaOurs(url)).toMatchObject({ delivery: 'received', message: expect.stringMatching(/3 content codings/) });
  });

  it('raw deflate under Content-Encoding: deflate is unreadable (Z_DATA_ERROR); ours reads it', async () => {
    const url = await serve(200, { 'content-encoding': 'deflate' }, zlib.deflateRawSync(json));
    expect(await viaInterceptor(url)).toEqual({ status: 200, error: 'Z_DATA_ERROR' });
    expect(await viaOurs(url)).toMatchObject({ status: 200, bodyText: '{"a":1}' });
  });

  it('an empty coded body (Content-Length: 0) of a 503 fails to decode (Z_BUF_ERROR), losing the status; ours: the 503', async () => {
    const url = await serve(503, { 'content-encoding': 'gzip', 'content-length': 0, 'retry-after': '7' }, Buffer.alloc(0));
    expect(await viaInterceptor(url)).toEqual({ status: 503, error: 'Z_BUF_ERROR' });
    expect(await viaOurs(url)).toMatchObject({ status: 503, bodyText: '', headers: { 'retry-after': '7' } });
  });
});
