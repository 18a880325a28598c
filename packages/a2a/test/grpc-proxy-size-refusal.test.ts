/**
 * Review14: a RESOURCE_EXHAUSTED "Received message larger than max (<n> vs <max>)" whose max is not our cap is not
 * always the agent's server refusing OUR request. A gRPC proxy between us and the agent (here a real grpc-js one) that
 * forwarded our request, the agent's handler ran, and the agent's answer was over the proxy's own receive cap relays
 * its status with the very same text. Reading it as `RequestTooLargeError` (delivery not-sent, effect none) lets the
 * step go to another agent, or reopens an answered question: the work done twice. Only a reported length equal to our
 * request message's own is the server's refusal of our request (`errorFromGrpc`'s `requestBytes`).
 */
import { Client, credentials, Server, ServerCredentials, type ServiceError, type UntypedServiceImplementation } from '@grpc/grpc-js';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { A2AError, RequestTooLargeError, sendEffectOf } from '../src/errors.ts';
import { callError, withGrpcTransport } from './helpers/grpc-calls.ts';

const CAP = 64 * 1024;
const PROXY_CAP = 1024;
let handled = 0;
let answerBytes = 2_000;
let agent: Server;
let proxy: Server;
let upstream: Client;
let proxyUrl = '';

const pass = (value: Buffer): Buffer => value;
const path = (method: string) => ({ path: `/lf.a2a.v1.A2AService/${method}`, requestStream: false, responseStream: false, requestSerialize: pass, requestDeserialize: pass, responseSerialize: pass, responseDeserialize: pass });
const bind = (server: Server) => new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, port) => (error ? reject(error) : resolve(port))));

beforeAll(async () => {
  // The agent: its handler runs (counted) and answers `answerBytes` bytes (an answer protobuf need not parse: the proxy refuses it first).
  agent = new Server();
  const answer = (_call: unknown, callback: (error: null, value: Buffer) => void) => {
    handled += 1;
    callback(null, Buffer.alloc(answerBytes, 1));
  };
  agent.addService({ SendMessage: path('SendMessage'), GetTask: path('GetTask') }, { SendMessage: answer, GetTask: answer } as UntypedServiceImplementation);
  const agentPort = await bind(agent);
  // The proxy: forwards each call with a grpc-js client whose receive cap is PROXY_CAP, and relays the upstream's status.
  upstream = new Client(`127.0.0.1:${agentPort}`, credentials.createInsecure(), { 'grpc.max_receive_message_length': PROXY_CAP });
  proxy = new Server();
  const forward = (method: string) => (call: { request: Buffer }, callback: (error: ServiceError | null, value?: Buffer) => void) => {
    upstream.makeUnaryRequest(`/lf.a2a.v1.A2AService/${method}`, pass, pass, call.request, (error: ServiceError | null, value?: Buffer) => (error ? callback(error) : callback(null, value)));
  };
  proxy.addService({ SendMessage: path('SendMessage'), GetTask: path('GetTask') }, { SendMessage: forward('SendMessage'), GetTask: forward('GetTask') } as UntypedServiceImplementation);
  proxyUrl = `http://127.0.0.1:${await bind(proxy)}`;
});
afterAll(() => {
  upstream.close();
  proxy.forceShutdown();
  agent.forceShutdown();
});

/** The agent had our request: never "nothing reached the agent" (REQUEST_TOO_LARGE, not-sent, effect none). */
const expectNotNotSent = (error: unknown) => {
  expect(error).toBeInstanceOf(A2AError);
  expect(error).not.toBeInstanceOf(RequestTooLargeError);
  expect((error as A2AError).delivery).not.toBe('not-sent');
  expect(sendEffectOf(error)).toBe('maybe');
};

describe('a proxy refusing the agent\'s answer as over its cap (after the agent\'s handler had our request)', () => {
  it('case: SendMessage through the proxy, the agent handled it, its answer over the proxy\'s cap: not REQUEST_TOO_LARGE (fails on fix14)', async () => {
    await withGrpcTransport(proxyUrl, CAP, async (transport) => {
      answerBytes = 2_000;
      const before = handled;
      const error = await callError(transport, 'send', 'book');
      expect(handled).toBe(before + 1);
      expect((error as A2AError).message).toContain(`Received message larger than max (${answerBytes} vs ${PROXY_CAP})`);
      expectNotNotSent(error);
    });
  });

  it('property: over answer sizes past the proxy\'s cap, requests and calls, the handler ran and the error never says not-sent', async () => {
    await withGrpcTransport(proxyUrl, CAP, async (transport) => {
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: PROXY_CAP + 1, max: 16 * 1024 }), fc.integer({ min: 1, max: 600 }), fc.constantFrom('send' as const, 'get' as const), async (size, textLength, call) => {
          answerBytes = size;
          const before = handled;
          const error = await callError(transport, call, (call === 'send' ? 'b' : 'T').repeat(textLength));
          expect(handled).toBe(before + 1);
          expectNotNotSent(error);
        }),
        { numRuns: 30 },
      );
    });
  });
});
