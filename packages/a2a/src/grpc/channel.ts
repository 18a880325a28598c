/**
 * gRPC connections for one agent interface. The interface URL is http(s) like
 * the other bindings (spec §8.3 example: `https://…/a2a/grpc`): `https:` means
 * TLS, `http:` plaintext (loopback and private networks only make sense there);
 * the port defaults to 443 / 80. With an address policy (field case R19) the host
 * is resolved and checked before every call and the channel connects to the
 * checked address itself, keeping the host name as `:authority` and TLS server
 * name, so a DNS answer that changed after discovery cannot redirect the call.
 */
import { isIP } from 'node:net';
import { Client, credentials as channelCredentials, type ChannelOptions } from '@grpc/grpc-js';
import { type AddressPolicyOptions, checkUrl } from '../address-policy.ts';
import { ProtocolError } from '../errors.ts';

/** Where an interface URL points. */
export interface GrpcEndpoint {
  host: string;
  port: number;
  /** TLS (`https:`) or plaintext (`http:`). */
  secure: boolean;
  /** `host:port` as sent in `:authority`. */
  authority: string;
}

/** Parses an http(s) interface URL. Throws `ProtocolError` for another scheme (no guessing TLS from a bare `host:port`). */
export function grpcEndpoint(url: string): GrpcEndpoint {
  const parsed = URL.canParse(url) ? new URL(url) : undefined;
  if (parsed === undefined || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
    throw new ProtocolError(`gRPC interface URL must be http(s) (TLS by scheme): ${url}`, { delivery: 'not-sent' });
  }
  const secure = parsed.protocol === 'https:';
  const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = parsed.port === '' ? (secure ? 443 : 80) : Number(parsed.port);
  return { host, port, secure, authority: parsed.host || `${parsed.hostname}:${port}` };
}

const hostPort = (address: string, port: number): string => (isIP(address) === 6 ? `[${address}]:${port}` : `${address}:${port}`);

/** Channel options every connection gets; `maxMessageBytes` caps one received message. */
export interface GrpcChannelSettings {
  maxMessageBytes: number;
  addressPolicy?: AddressPolicyOptions;
}

/** Distinct checked addresses kept open per interface. */
const MAX_TARGETS = 4;

/** One `Client` per target address (grpc-js multiplexes calls over its HTTP/2 connection). Close with `close()`. */
export class GrpcChannelPool {
  private readonly endpoint: GrpcEndpoint;
  private readonly clients = new Map<string, Client>();

  constructor(
    private readonly url: string,
    private readonly settings: GrpcChannelSettings,
  ) {
    this.endpoint = grpcEndpoint(url);
  }

  /**
   * The client to use for the next call. With a policy, checks the URL first
   * (`BlockedAddressError` for a refused address, `NetworkError` when it does
   * not resolve) and targets the first checked address.
   */
  async client(): Promise<Client> {
    const { host, port, secure, authority } = this.endpoint;
    const policy = this.settings.addressPolicy;
    const address = policy === undefined ? host : (await checkUrl(this.url, policy))[0]!.address;
    const target = isIP(address) === 0 ? `dns:${hostPort(address, port)}` : hostPort(address, port);
    let client = this.clients.get(target);
    if (!client) {
      const options: ChannelOptions = {
        'grpc.max_receive_message_length': this.settings.maxMessageBytes,
        'grpc.default_authority': authority,
        // P35: no transparent retry below the journal. grpc-js replays a call whose stream the server refused
        // (REFUSED_STREAM, "never processed"), which for SendMessage can create a second task; every retry is ours.
        'grpc.enable_retries': 0,
        ...(secure && isIP(host) === 0 ? { 'grpc.ssl_target_name_override': host } : {}),
      };
      const channel = secure ? channelCredentials.createSsl() : channelCredentials.createInsecure();
      client = new Client(target, channel, options);
      this.clients.set(target, client);
      this.closeOldest();
    }
    return client;
  }

  /** A host whose DNS answers keep changing must not pile up channels: the oldest beyond `MAX_TARGETS` is closed. */
  private closeOldest(): void {
    for (const [target, client] of this.clients) {
      if (this.clients.size <= MAX_TARGETS) return;
      client.close();
      this.clients.delete(target);
    }
  }

  /** Closes every connection: no new call starts on them. */
  close(): void {
    for (const client of this.clients.values()) client.close();
    this.clients.clear();
  }
}
