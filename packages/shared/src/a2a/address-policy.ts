/**
 * Agent URL address policy (field case R19): the card URL and every interface
 * URL must be http(s) and resolve only to addresses the policy allows; the
 * dispatcher checks again at connection time (DNS can change between discovery
 * and use) and connects to the address it checked, never to a second lookup.
 * Redirects are never followed: undici's `request` does not follow them and no
 * redirect interceptor is composed here.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { Agent, buildConnector } from 'undici';
import { A2AError, NetworkError } from './errors.ts';

/** What an IP address is. Only `public` is allowed by default. */
export type AddressCategory = 'loopback' | 'private' | 'link-local' | 'metadata' | 'unspecified' | 'multicast' | 'reserved' | 'public';

export interface ResolvedAddress {
  address: string;
  /** 4 or 6. */
  family: number;
}

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

/** A URL or address the policy refuses. Not retryable: the same URL gets the same verdict. */
export class BlockedAddressError extends A2AError {
  readonly host: string;
  readonly category: BlockedCategory;
  readonly address?: string;
  constructor(message: string, details: { host: string; category: BlockedCategory; address?: string; cause?: unknown }) {
    super(message, 'BLOCKED_ADDRESS', false, { reason: 'BLOCKED_ADDRESS', cause: details.cause });
    this.host = details.host;
    this.category = details.category;
    if (details.address !== undefined) this.address = details.address;
  }
}

type Family = 'ipv4' | 'ipv6';
/** Checked in this order, so 169.254.169.254 is `metadata`, not `link-local`. */
const RANGES: readonly [AddressCategory, Family, string, number][] = [
  ['metadata', 'ipv4', '169.254.169.254', 32], // AWS, GCP, Azure, OpenStack instance metadata
  ['metadata', 'ipv4', '100.100.100.200', 32], // Alibaba Cloud instance metadata (inside CGNAT)
  ['metadata', 'ipv6', 'fd00:ec2::254', 128], // AWS IMDS over IPv6
  ['unspecified', 'ipv4', '0.0.0.0', 8], // Linux connects 0.0.0.0 to the local host
  ['unspecified', 'ipv6', '::', 128],
  ['loopback', 'ipv4', '127.0.0.0', 8],
  ['loopback', 'ipv6', '::1', 128],
  ['link-local', 'ipv4', '169.254.0.0', 16],
  ['link-local', 'ipv6', 'fe80::', 10],
  ['private', 'ipv4', '10.0.0.0', 8],
  ['private', 'ipv4', '172.16.0.0', 12],
  ['private', 'ipv4', '192.168.0.0', 16],
  ['private', 'ipv4', '100.64.0.0', 10], // CGNAT (RFC 6598): not reachable from the internet
  ['private', 'ipv6', 'fc00::', 7], // unique local (RFC 4193)
  ['private', 'ipv6', 'fec0::', 10], // deprecated site-local (RFC 3879)
  ['multicast', 'ipv4', '224.0.0.0', 4],
  ['multicast', 'ipv6', 'ff00::', 8],
  ['reserved', 'ipv4', '240.0.0.0', 4], // includes the 255.255.255.255 broadcast
];
const BLOCK_LISTS: readonly [AddressCategory, BlockList][] = [...new Set(RANGES.map(([category]) => category))].map((category) => {
  const list = new BlockList();
  for (const [rangeCategory, family, prefix, bits] of RANGES) if (rangeCategory === category) list.addSubnet(prefix, bits, family);
  return [category, list];
});

/** The 8 hextets of a valid IPv6 address (an embedded dotted IPv4 tail is allowed). */
function hextets(ip: string): number[] {
  let text = ip;
  const tail = text.slice(text.lastIndexOf(':') + 1);
  if (tail.includes('.')) {
    const [a = 0, b = 0, c = 0, d = 0] = tail.split('.').map(Number);
    text = `${text.slice(0, text.length - tail.length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', rest] = text.split('::');
  const parse = (part: string): number[] => (part === '' ? [] : part.split(':').map((group) => Number.parseInt(group, 16)));
  const left = parse(head);
  const right = rest === undefined ? [] : parse(rest);
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}

/** IPv4 carried in an IPv6 address: `::ffff:a.b.c.d` (mapped) and `64:ff9b::a.b.c.d` (NAT64, RFC 6052). */
function embeddedIpv4(ip: string): string | undefined {
  const [h0, h1, h2, h3, h4, h5, h6 = 0, h7 = 0] = hextets(ip);
  const mapped = h0 === 0 && h1 === 0 && h2 === 0 && h3 === 0 && h4 === 0 && h5 === 0xffff;
  const nat64 = h0 === 0x64 && h1 === 0xff9b && h2 === 0 && h3 === 0 && h4 === 0 && h5 === 0;
  return mapped || nat64 ? `${h6 >> 8}.${h6 & 0xff}.${h7 >> 8}.${h7 & 0xff}` : undefined;
}

/** Classifies an IP literal. Throws `TypeError` for a non-IP string. IPv6 zone ids (`%eth0`) are ignored. */
export function classifyAddress(ip: string): AddressCategory {
  const bare = ip.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const version = isIP(bare);
  if (version === 0) throw new TypeError(`not an IP address: ${ip}`);
  const v4 = version === 6 ? embeddedIpv4(bare) : bare;
  const [address, family]: [string, Family] = v4 === undefined ? [bare, 'ipv6'] : [v4, 'ipv4'];
  return BLOCK_LISTS.find(([, list]) => list.check(address, family))?.[0] ?? 'public';
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
  if (options.allowLoopback) allowed.add('loopback');
  if (options.allowPrivate) allowed.add('private');
  if (options.allowLinkLocal) allowed.add('link-local');
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
      throw new BlockedAddressError(`blocked address: ${bare} -> ${address} (${category})`, { host: bare, category, address });
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
    throw new NetworkError(`cannot resolve ${parsed.hostname}`, { cause: error });
  }
  if (validated.length === 0) throw new NetworkError(`no address for ${parsed.hostname}`);
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
  return agent;
}

const policiesOfDispatchers = new WeakMap<object, AddressPolicyOptions>();

/** The policy a `createPolicyDispatcher` dispatcher enforces, so a binding that does not use undici (gRPC) applies the same one. */
export function addressPolicyOf(dispatcher: object | undefined): AddressPolicyOptions | undefined {
  return dispatcher === undefined ? undefined : policiesOfDispatchers.get(dispatcher);
}
