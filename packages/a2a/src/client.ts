/**
 * Transport choice: the `A2ATransport` for an agent interface, built by the first of the caller's transport
 * factories that speaks its binding and protocol version. Nothing registers itself on import (as a2a-js
 * `ClientFactory({ transports })`): the caller passes the list, `defaultTransports` (JSON-RPC and HTTP+JSON, 1.0 and
 * 0.3) unless told otherwise; gRPC is `grpcTransports` from `@durable-a2a/a2a/grpc`, so a process that never talks
 * gRPC never loads it.
 */
import { ProtocolError } from './errors.ts';
import { isHttpUrl } from './card-url.ts';
import { withPartLimit } from './bounded-transport.ts';
import { JsonRpcTransport } from './jsonrpc.ts';
import { resolveLimits } from './limits.ts';
import { RestTransport } from './rest.ts';
import type { A2ATransport, AgentInterface, TransportOptions } from './transport.ts';
import { JsonRpcV03Transport } from './v03/jsonrpc.ts';
import { RestV03Transport } from './v03/rest.ts';

/** One binding and protocol version a client speaks, and how to build its transport for one interface of a card. */
export interface TransportFactory {
  /** `JSONRPC`, `HTTP+JSON` or `GRPC` (spec §8.3 `AgentInterface.protocolBinding`), compared exactly. */
  readonly protocolBinding: string;
  /** `Major.Minor`, e.g. `'1.0'` or `'0.3'` (spec §3.6), compared exactly. */
  readonly protocolVersion: string;
  /** Builds the transport; `createTransport` adds the part limit around it. */
  create(agentInterface: AgentInterface, options: TransportOptions): A2ATransport;
}

/**
 * JSON-RPC and HTTP+JSON for A2A 1.0 and 0.3 (the 0.3 adapter returns the 1.0 model), in that order. Everything
 * they load is in this package's main entry; add `grpcTransports` from `@durable-a2a/a2a/grpc` for gRPC.
 */
export const defaultTransports: readonly TransportFactory[] = Object.freeze([
  { protocolBinding: 'JSONRPC', protocolVersion: '1.0', create: (agentInterface, options) => new JsonRpcTransport(agentInterface, options) },
  { protocolBinding: 'HTTP+JSON', protocolVersion: '1.0', create: (agentInterface, options) => new RestTransport(agentInterface, options) },
  { protocolBinding: 'JSONRPC', protocolVersion: '0.3', create: (agentInterface, options) => new JsonRpcV03Transport(agentInterface, options) },
  { protocolBinding: 'HTTP+JSON', protocolVersion: '0.3', create: (agentInterface, options) => new RestV03Transport(agentInterface, options) },
] satisfies TransportFactory[]);

/** `TransportOptions` plus the factories to choose from. */
export interface CreateTransportOptions extends TransportOptions {
  /** The bindings and versions this client speaks; the first match wins. Default `defaultTransports`. */
  transports?: readonly TransportFactory[];
}

/** The factory in `transports` for the interface's binding and version, or `undefined`. */
export function transportFactoryFor(
  agentInterface: Pick<AgentInterface, 'protocolBinding' | 'protocolVersion'>,
  transports: readonly TransportFactory[] = defaultTransports,
): TransportFactory | undefined {
  return transports.find(
    (factory) => factory.protocolBinding === agentInterface.protocolBinding && factory.protocolVersion === agentInterface.protocolVersion,
  );
}

/** `true` when `transports` (default `defaultTransports`) can build a transport for the interface (use as a filter over `card.interfaces`). */
export function isInterfaceSupported(
  agentInterface: Pick<AgentInterface, 'protocolBinding' | 'protocolVersion'>,
  transports: readonly TransportFactory[] = defaultTransports,
): boolean {
  return transportFactoryFor(agentInterface, transports) !== undefined;
}

/**
 * The transport for `agentInterface`, built by the first of `options.transports` (default `defaultTransports`) that
 * speaks its binding and version, with every input limit of `options.limits` (`limits.ts`) enforced. Throws
 * `ProtocolError` (`delivery: 'not-sent'`) for a non-http(s) URL or a binding/version pair none of them speaks.
 */
export function createTransport(agentInterface: AgentInterface, options: CreateTransportOptions = {}): A2ATransport {
  if (!isHttpUrl(agentInterface.url)) throw new ProtocolError(`interface URL is not http(s): ${agentInterface.url}`, { delivery: 'not-sent' });
  const { transports, ...transportOptions } = options;
  const factory = transportFactoryFor(agentInterface, transports);
  if (!factory) {
    throw new ProtocolError(`no transport for ${agentInterface.protocolBinding} ${agentInterface.protocolVersion}`, { delivery: 'not-sent' });
  }
  return withPartLimit(factory.create(agentInterface, transportOptions), resolveLimits(transportOptions.limits).partsPerMessage);
}
