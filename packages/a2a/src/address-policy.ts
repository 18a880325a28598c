/**
 * Agent URL address policy (field case R19): the card URL and every interface
 * URL must be http(s) and resolve only to addresses the policy allows; the
 * dispatcher checks again at connection time (DNS can change between discovery
 * and use) and connects to the address it checked, never to a second lookup.
 * Redirects are never followed: undici's `request` does not follow them and no
 * redirect interceptor is composed here.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { Agent, buildConnector, Client } from 'undici';
import { A2AError, NetworkError } from './errors.ts';

/** What an IP address is. Only `public` is allowed by default. */
export type AddressCategory = 'loopback' | 'private' | 'link-local' | 'metadata' | 'unspecified' | 'multicast' | 'reserved' | 'public';

/** One address a host name resolved to. */
export interface ResolvedAddress {
  address: string;
  /** 4 or 6. */
  family: number;
}

/**
 * Which addresses an agent URL may resolve to (field case R19: a card or its URLs must not point inside our network).
 * Every category but `public` is refused unless allowed here; cloud metadata addresses always are.
 */
export interface AddressPolicyOptions {
  /** 127.0.0.0/8, ::1. Default false; tests set it to reach servers on port 0. */
  allowLoopback?: boolean;
  /** 10/8, 172.16/12, 192.168/16, 100.64/10 (CGNAT), fc00::/7, fec0::/10. Default false. */
  allowPrivate?: boolean;
  /** 169.254/16, fe80::/10 (metadata addresses inside them stay blocked). Default false. */
  allowLinkLocal?: boolean;
  /** Exact host names (or IP literals) always allowed, whatever they resolve to. */
  allowedHosts?: string[];
  /** DNS resolver; default `dns.promises.lookup(hostname, { all: true })`. Injected by tests. */
  lookup?: (hostname: string) => Promise<ResolvedAddress[]>;
}

/** A resolved address that passed the policy. */
export interface ValidatedAddress extends ResolvedAddress {
  category: AddressCategory;
}

/** Why a URL was refused: the address category, or `scheme` for a non-http(s) or unparsable URL. */
export type BlockedCategory = Exclude<AddressCategory, 'public'> | 'scheme';

/**
 * The `AddressPolicyOptions` switch that allows each category a person may choose to allow. The other categories
 * (metadata, unspecified, multicast, reserved) have none: only a host named in `allowedHosts` passes with them.
 */
export const ALLOWING_OPTION: Readonly<Partial<Record<BlockedCategory, 'allowLoopback' | 'allowPrivate' | 'allowLinkLocal'>>> = {
  loopback: 'allowLoopback',
  private: 'allowPrivate',
  'link-local': 'allowLinkLocal',
};

/**
 * The environment variable of the executables (`durable-a2a-api` and `durable-a2a-workers` read the same names) that
 * sets each `AddressPolicyOptions` switch; `allowLinkLocal` has none (a library option only).
 */
export const ADDRESS_POLICY_VARIABLES = {
  allowLoopback: 'DA2A_ALLOW_LOOPBACK',
  allowPrivate: 'DA2A_ALLOW_PRIVATE',
  allowedHosts: 'DA2A_ALLOWED_AGENT_HOSTS',
} as const;

/** An executable's parsed environment, as far as the address policy reads it (the names of `ADDRESS_POLICY_VARIABLES`). */
export type AddressPolicyEnvironment = Readonly<
  Record<(typeof ADDRESS_POLICY_VARIABLES)['allowLoopback' | 'allowPrivate'], boolean> & Record<(typeof ADDRESS_POLICY_VARIABLES)['allowedHosts'], string[]>
>;

/**
 * The `AddressPolicyOptions` of `durable-a2a-api` and `durable-a2a-workers`: each switch read from the parsed
 * environment under its `ADDRESS_POLICY_VARIABLES` name, the name a refusal's hint tells a person to set.
 */
export function addressPolicyFrom(environment: AddressPolicyEnvironment): AddressPolicyOptions {
  return {
    allowLoopback: environment[ADDRESS_POLICY_VARIABLES.allowLoopback],
    allowPrivate: environment[ADDRESS_POLICY_VARIABLES.allowPrivate],
    allowedHosts: environment[ADDRESS_POLICY_VARIABLES.allowedHosts],
  };
}

/**
 * What a refusal of `category` adds to its message: how to allow it, as the library option and as the executables'
 * environment variable, so the person who sees it knows what to set wherever the policy came from.
 */
function allowingHint(category: BlockedCategory): string {
  const option = ALLOWING_OPTION[category];
  if (!option) return '';
  const variable = (ADDRESS_POLICY_VARIABLES as Partial<Record<string, string>>)[option];
  return `; to allow it: addressPolicy.${option}, or the host in addressPolicy.allowedHosts (durable-a2a-api and durable-a2a-workers: ${variable ? `${variable}=true, or ` : ''}${ADDRESS_POLICY_VARIABLES.allowedHosts}=<host>)`;
}

/**
 * A URL or address the policy refuses. Not retryable: the same URL gets the same verdict. Delivery `not-sent`: the
 * refusal comes before any request leaves this process (at discovery, or at connection time before a byte is written).
 */
export class BlockedAddressError extends A2AError {
  readonly host: string;
  readonly category: BlockedCategory;
  readonly address?: string;
  constructor(message: string, details: { host: string; category: BlockedCategory; address?: string; cause?: unknown }) {
    super(message, 'BLOCKED_ADDRESS', false, { reason: 'BLOCKED_ADDRESS', cause: details.cause, delivery: 'not-sent' });
    this.host = details.host;
    this.category = details.category;
    if (details.address !== undefined) this.address = details.address;
  }
}

/**
 * Instance-metadata endpoints: not IANA special-purpose ranges (169.254.169.254
 * is link-local, 100.100.100.200 is inside CGNAT), named first so the refusal
 * says what they are.
 */
const METADATA_ADDRESSES = new Set(['169.254.169.254', '100.100.100.200', 'fd00:ec2::254']);

/**
 * ipaddr.js range names (its tables follow the IANA IPv4 and IPv6
 * special-purpose address registries) → our categories. Ranges IANA marks
 * globally reachable (AS112, AMT) count as public; every other special range
 * is refused by default. Unknown future names fall to `reserved`.
 */
const RANGE_CATEGORIES: Record<string, AddressCategory> = {
  unicast: 'public',
  as112: 'public',
  as112v6: 'public',
  amt: 'public',
  unspecified: 'unspecified',
  broadcast: 'reserved',
  multicast: 'multicast',
  linkLocal: 'link-local',
  loopback: 'loopback',
  carrierGradeNat: 'private', // RFC 6598: not reachable from the internet
  private: 'private',
  uniqueLocal: 'private', // RFC 4193
  deprecatedSiteLocal: 'private', // RFC 3879
  reserved: 'reserved',
};

/** IPv6 ranges that carry an IPv4 address: classified by that address (mapped, NAT64 well-known prefix). */
const EMBEDDING_RANGES = new Set(['ipv4Mapped', 'rfc6052']);

/** RFC 8215 local-use NAT64 prefix: translated to addresses of the local network. */
const NAT64_LOCAL_USE = ipaddr.parseCIDR('64:ff9b:1::/48') as [ipaddr.IPv6, number];
/** Only 2000::/3 is allocated as global unicast; IPv6 "unicast" outside it is reserved space. */
const GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3') as [ipaddr.IPv6, number];

function classifyIpv4(address: ipaddr.IPv4): AddressCategory {
  if (METADATA_ADDRESSES.has(address.toString())) return 'metadata';
  return RANGE_CATEGORIES[address.range()] ?? 'reserved';
}

function classifyIpv6(address: ipaddr.IPv6): AddressCategory {
  if (METADATA_ADDRESSES.has(address.toString())) return 'metadata';
  const range = address.range();
  if (address.match(NAT64_LOCAL_USE)) return 'private';
  if (EMBEDDING_RANGES.has(range)) {
    const parts = address.parts;
    return classifyIpv4(new ipaddr.IPv4([parts[6]! >> 8, parts[6]! & 0xff, parts[7]! >> 8, parts[7]! & 0xff]));
  }
  if (range === 'unicast') return address.match(GLOBAL_UNICAST) ? 'public' : 'reserved';
  // 6to4, Teredo, SIIT (rfc6145), ORCHID, discard, benchmarking, segment routing…: not an agent's address.
  return RANGE_CATEGORIES[range] ?? 'reserved';
}

/**
 * Classifies an IP literal by ipaddr.js's special-purpose range tables (field
 * case RT9: every IPv4-in-IPv6 form is classified by the IPv4 it carries).
 * Throws `TypeError` for a non-IP string. IPv6 zone ids (`%eth0`) are ignored.
 */
export function classifyAddress(ip: string): AddressCategory {
  const bare = ip.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  if (isIP(bare) === 0 || !ipaddr.isValid(bare)) throw new TypeError(`not an IP address: ${ip}`);
  const address = ipaddr.parse(bare);
  return address.kind() === 'ipv4' ? classifyIpv4(address as ipaddr.IPv4) : classifyIpv6(address as ipaddr.IPv6);
}

/** `AddressPolicyOptions` with defaults applied once. */
interface CompiledPolicy {
  allows(category: AddressCategory): boolean;
  isAllowedHost(host: string): boolean;
  lookup(hostname: string): Promise<ResolvedAddress[]>;
}

const normalizeHost = (host: string): string => host.replace(/^\[|\]$/g, '').replace(/\.$/, '').toLowerCase();
const defaultLookup = (hostname: string): Promise<ResolvedAddress[]> => dnsLookup(hostname, { all: true });

function compilePolicy(options: AddressPolicyOptions): CompiledPolicy {
  const allowedHosts = new Set((options.allowedHosts ?? []).map(normalizeHost));
  const allowed = new Set<AddressCategory>(['public']);
  for (const [category, option] of Object.entries(ALLOWING_OPTION)) if (options[option]) allowed.add(category as AddressCategory);
  return {
    allows: (category) => allowed.has(category),
    isAllowedHost: (host) => allowedHosts.has(normalizeHost(host)),
    lookup: options.lookup ?? defaultLookup,
  };
}

/** Resolves `host` (IP literals as is) and throws `BlockedAddressError` if ANY address is refused. Lookup errors propagate. */
async function resolveChecked(policy: CompiledPolicy, host: string): Promise<ValidatedAddress[]> {
  const bare = normalizeHost(host);
  const literal = isIP(bare);
  const resolved = literal !== 0 ? [{ address: bare, family: literal }] : await policy.lookup(bare);
  const trusted = policy.isAllowedHost(bare);
  return resolved.map(({ address, family }) => {
    const category = classifyAddress(address);
    if (!trusted && category !== 'public' && !policy.allows(category)) {
      throw new BlockedAddressError(`blocked address: ${bare === address ? bare : `${bare} -> ${address}`} (${category})${allowingHint(category)}`, { host: bare, category, address });
    }
    return { address, family, category };
  });
}

/**
 * Checks `url` against the policy: http(s) only, every resolved address
 * allowed. Returns the validated addresses. Throws `BlockedAddressError`, or
 * `NetworkError` when the host does not resolve.
 */
export async function checkUrl(url: string, options: AddressPolicyOptions = {}): Promise<ValidatedAddress[]> {
  const parsed = URL.canParse(url) ? new URL(url) : undefined;
  if (parsed === undefined || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
    const scheme = parsed?.protocol ?? 'unparsable URL';
    throw new BlockedAddressError(`blocked address: ${scheme} is not http(s)`, { host: parsed?.hostname ?? '', category: 'scheme' });
  }
  const policy = compilePolicy(options);
  let validated: ValidatedAddress[];
  try {
    validated = await resolveChecked(policy, parsed.hostname);
  } catch (error) {
    if (error instanceof A2AError) throw error;
    throw new NetworkError(`cannot resolve ${parsed.hostname}`, { cause: error, delivery: 'not-sent' });
  }
  if (validated.length === 0) throw new NetworkError(`no address for ${parsed.hostname}`, { delivery: 'not-sent' });
  return validated;
}

/** A `net.connect` lookup that returns only checked addresses, so the socket goes to the address that was checked. */
function policyLookup(policy: CompiledPolicy): LookupFunction {
  return (hostname, dnsOptions, callback) => {
    resolveChecked(policy, hostname).then(
      (validated) => {
        const wanted = dnsOptions.family === 4 || dnsOptions.family === 6 ? validated.filter(({ family }) => family === dnsOptions.family) : validated;
        const first = wanted[0];
        if (first === undefined) {
          callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), '');
        } else if (dnsOptions.all) {
          callback(null, wanted.map(({ address, family }) => ({ address, family })));
        } else {
          callback(null, first.address, first.family);
        }
      },
      (error: Error) => callback(error, ''),
    );
  };
}

/** Connection timeout of the policy dispatcher; undici's own default. */
const CONNECT_TIMEOUT_MS = 10_000;

/**
 * An undici `Agent` that checks the address of every new connection against
 * the policy. Host names are resolved by the policy's lookup and the socket
 * connects to the checked addresses (`net.connect` does no second lookup); IP
 * literals, which `net.connect` never looks up, are checked before connecting.
 * A refused address fails the request with `BlockedAddressError`.
 */
export function createPolicyDispatcher(options: AddressPolicyOptions = {}, agentOptions: Omit<Agent.Options, 'connect'> = {}): Agent {
  const policy = compilePolicy(options);
  const connectChecked = buildConnector({ lookup: policyLookup(policy), timeout: CONNECT_TIMEOUT_MS });
  const connect: buildConnector.connector = (connectOptions, callback) => {
    const host = normalizeHost(connectOptions.hostname);
    if (isIP(host) === 0) {
      connectChecked(connectOptions, callback);
      return;
    }
    resolveChecked(policy, host).then(
      () => connectChecked(connectOptions, callback),
      (error: Error) => callback(error, null),
    );
  };
  const agent = new Agent({ ...agentOptions, connect });
  policiesOfDispatchers.set(agent, options);
  connectorsOfDispatchers.set(agent, connect);
  return agent;
}

const policiesOfDispatchers = new WeakMap<object, AddressPolicyOptions>();
const connectorsOfDispatchers = new WeakMap<object, buildConnector.connector>();

/**
 * A connection of its own to `origin` (an undici `Client`, one socket) that connects through the same address check
 * as `dispatcher`, a `createPolicyDispatcher` dispatcher: for a long-lived stream, which would hold one connection of
 * the dispatcher's pool for its whole life, and every request to that origin would then look through each such busy
 * connection for a free one (undici's Pool scans its connections per request: 10,000 open streams, 10,000 looks per
 * request). Undefined for any other dispatcher (an injected one is used as it is). The caller destroys it with its stream.
 */
export function ownConnectionOf(dispatcher: object, origin: string): Client | undefined {
  const connect = connectorsOfDispatchers.get(dispatcher);
  return connect === undefined ? undefined : new Client(origin, { connect });
}

/** The policy a `createPolicyDispatcher` dispatcher enforces, so a binding that does not use undici (gRPC) applies the same one. */
export function addressPolicyOf(dispatcher: object | undefined): AddressPolicyOptions | undefined {
  return dispatcher === undefined ? undefined : policiesOfDispatchers.get(dispatcher);
}
