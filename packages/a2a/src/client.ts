/**
 * Transport factory: picks the `A2ATransport` for an agent interface from a
 * registry keyed by binding and protocol version. 1.0 JSON-RPC and HTTP+JSON
 * are built in; a 0.3 adapter registers itself with `registerTransport`.
 */
import { ProtocolError } from './errors.ts';
import { isHttpUrl } from './card.ts';
import { withPartLimit } from './bounded-transport.ts';
import { JsonRpcTransport } from './jsonrpc.ts';
import { resolveLimits } from './limits.ts';
import { RestTransport } from './rest.ts';
import type { A2ATransport, AgentInterface, TransportOptions } from './transport.ts';

/** Builds a transport for one interface. */
export type TransportFactory = (agentInterface: AgentInterface, options: TransportOptions) => A2ATransport;

const registryKey = (binding: string, protocolVersion: string): string => `${binding}@${protocolVersion}`;

const factories = new Map<string, TransportFactory>([
  [registryKey('JSONRPC', '1.0'), (agentInterface, options) => new JsonRpcTransport(agentInterface, options)],
  [registryKey('HTTP+JSON', '1.0'), (agentInterface, options) => new RestTransport(agentInterface, options)],
]);

/** Registers (or replaces) the factory for a binding and `Major.Minor` version, e.g. `('JSONRPC', '0.3', ...)`. */
export function registerTransport(binding: string, protocolVersion: string, factory: TransportFactory): void {
  factories.set(registryKey(binding, protocolVersion), factory);
}

/** `true` when a transport is registered for the interface's binding and version (use with `selectInterface`'s output or as a filter). */
export function isInterfaceSupported(agentInterface: AgentInterface): boolean {
  return factories.has(registryKey(agentInterface.protocolBinding, agentInterface.protocolVersion));
}

/**
 * The transport for `agentInterface`, with every input limit of `options.limits` (`limits.ts`)
 * enforced. Throws `ProtocolError` (`delivery: 'not-sent'`) for a non-http(s) URL or a
 * binding/version pair nobody registered.
 */
export function createTransport(agentInterface: AgentInterface, options: TransportOptions = {}): A2ATransport {
  if (!isHttpUrl(agentInterface.url)) throw new ProtocolError(`interface URL is not http(s): ${agentInterface.url}`, { delivery: 'not-sent' });
  const factory = factories.get(registryKey(agentInterface.protocolBinding, agentInterface.protocolVersion));
  if (!factory) {
    throw new ProtocolError(`no transport for ${agentInterface.protocolBinding} ${agentInterface.protocolVersion}`, { delivery: 'not-sent' });
  }
  return withPartLimit(factory(agentInterface, options), resolveLimits(options.limits).partsPerMessage);
}
