/**
 * Stock A2A clients pointed at the front door, as a caller would configure them: `@a2a-js/sdk` 1.3.0
 * (JSON-RPC or HTTP+JSON) and 0.3.14 (JSON-RPC), each sending the API token as Bearer.
 */
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, RestTransportFactory, type Client } from '@a2a-js/sdk/client';
import { ClientFactory as ClientFactoryV03, JsonRpcTransportFactory as JsonRpcTransportFactoryV03, type Client as ClientV03 } from 'a2a-sdk-v03/client';
import { TEST_API_TOKEN } from './api-server.ts';

/** `fetch` with `Authorization: Bearer <token>` on every request. */
export function bearerFetch(token: string = TEST_API_TOKEN): typeof fetch {
  return (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${token}`);
    return fetch(input, { ...init, headers });
  };
}

/** A 1.3.0 client of the front door at `url` (the service origin, or `/a2a/agents/<name>` below it) over `binding`. */
export async function frontDoorClient(url: string, binding: 'JSONRPC' | 'HTTP+JSON', token?: string): Promise<Client> {
  const fetchImpl = bearerFetch(token);
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })],
      preferredTransports: [binding],
    }),
  );
  return factory.createFromUrl(url);
}

/** A 0.3.14 JSON-RPC client of the front door at `url`. */
export async function frontDoorClientV03(url: string, token?: string): Promise<ClientV03> {
  const factory = new ClientFactoryV03({ transports: [new JsonRpcTransportFactoryV03({ fetchImpl: bearerFetch(token) })] });
  return factory.createFromUrl(url);
}
