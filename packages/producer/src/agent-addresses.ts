/**
 * The address policy at request time (field case R19): `delegate` and `startWorkflow` (library
 * and HTTP API alike) check every fixed agent URL (steps and compensations) with the producer's
 * `addressPolicy`, the policy `registerAgent` and `POST /v1/agents` use, so a refused address is a typed
 * AgentAddressRefusedError (HTTP 422 AGENT_ADDRESS_REFUSED) now, before anything is written, not an
 * accepted call and a failure later in the workers. A host that does not resolve right now is let
 * through (DNS may be briefly down; the workers check again at connection time and fail the attempt
 * with the reason).
 */
import { isIP } from 'node:net';
import { BlockedAddressError, NetworkError, checkUrl, type AddressPolicyOptions } from '@durable-a2a/a2a';
import { LRUCache } from 'lru-cache';

/** A refused agent URL, naming the request field that holds it. */
export class AgentAddressRefusedError extends BlockedAddressError {
  constructor(
    cause: BlockedAddressError,
    readonly field: string,
  ) {
    super(`${field}: ${cause.message}`, { host: cause.host, category: cause.category, address: cause.address, cause });
  }
}

interface StepLike {
  agent?: string;
  compensation?: { agent?: string } | object;
}

/** A delegation, workflow or agent registration body. */
export interface AgentUrlHolder {
  cardUrl?: string;
  agent?: string;
  steps?: readonly StepLike[];
  /** A workflow's notification receiver: checked like an agent (the workers connect to it the same way). */
  notify?: { url?: string };
}

/** Every fixed agent URL in a delegation or workflow body, with the dotted field that holds it. */
export function agentUrlsOf(body: AgentUrlHolder): { field: string; url: string }[] {
  const found: { field: string; url: string }[] = [];
  if (body.cardUrl) found.push({ field: 'cardUrl', url: body.cardUrl });
  if (body.agent) found.push({ field: 'agent', url: body.agent });
  if (body.notify?.url) found.push({ field: 'notify.url', url: body.notify.url });
  (body.steps ?? []).forEach((step, index) => {
    if (step.agent) found.push({ field: `steps.${index}.agent`, url: step.agent });
    const compensation = step.compensation as { agent?: string } | undefined;
    if (compensation?.agent) found.push({ field: `steps.${index}.compensation.agent`, url: compensation.agent });
  });
  return found;
}

/**
 * URLs whose host is an IP literal that a policy allowed, per policy object: for those the verdict depends on the URL
 * and the policy alone (no DNS), so a producer delegating to the same agent again does not check it again. A host
 * name is checked on every call (what it resolves to may change). At most ALLOWED_LITERALS_KEPT URLs per policy (an
 * LRUCache: the least recently used URL is checked again first).
 */
const allowedLiterals = new WeakMap<AddressPolicyOptions, LRUCache<string, true>>();
const ALLOWED_LITERALS_KEPT = 1_000;

/** True when `url` parses and its host is an IP literal (IPv6 in brackets). */
function hasLiteralHost(url: string): boolean {
  const host = URL.parse(url)?.hostname;
  return host !== undefined && isIP(host.startsWith('[') ? host.slice(1, -1) : host) !== 0;
}

/** Throws AgentAddressRefusedError for the first URL the policy refuses. Distinct URLs are checked once. */
export async function checkAgentAddresses(body: AgentUrlHolder, policy: AddressPolicyOptions): Promise<void> {
  const checked = new Set<string>();
  let allowed = allowedLiterals.get(policy);
  for (const { field, url } of agentUrlsOf(body)) {
    if (checked.has(url) || allowed?.get(url)) continue;
    checked.add(url);
    try {
      await checkUrl(url, policy);
      if (!hasLiteralHost(url)) continue;
      if (!allowed) allowedLiterals.set(policy, (allowed = new LRUCache({ max: ALLOWED_LITERALS_KEPT })));
      allowed.set(url, true);
    } catch (error) {
      if (error instanceof BlockedAddressError) throw new AgentAddressRefusedError(error, field);
      if (!(error instanceof NetworkError)) throw error;
    }
  }
}
