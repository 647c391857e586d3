// Connect-time address checks. The host name is resolved here, every answer is checked, and the
// socket is opened to one of the checked addresses, so nothing can change between the check and
// the connect (no second lookup by the socket layer, no DNS-rebinding window).
import { lookup } from "node:dns/promises";
import { isIP, type Socket } from "node:net";
import { buildConnector } from "undici";
import { OutboundNetworkError } from "./outbound-errors.js";
import { type AddressPolicy, refusedError } from "./outbound-policy.js";

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to all its addresses. Injected so tests can map `evil.test` anywhere. */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = async (hostname) => {
  const answers = await lookup(hostname, { all: true, verbatim: true });
  return answers.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

const unbracket = (host: string) => (host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host);

/**
 * The addresses `hostname` may be reached at. One refused answer refuses the name: a host that
 * resolves to a public and a private address is treated as an attempt, not a choice.
 */
export async function resolveChecked(hostname: string, policy: AddressPolicy | null, resolve: Resolver): Promise<string[]> {
  const host = unbracket(hostname);
  let addresses: string[];
  if (isIP(host) !== 0) {
    addresses = [host];
  } else {
    try {
      addresses = (await resolve(host)).map((a) => a.address);
    } catch (cause) {
      throw new OutboundNetworkError(`cannot resolve ${host}`, { cause });
    }
    if (addresses.length === 0) throw new OutboundNetworkError(`${host} has no address`);
  }
  if (policy) {
    for (const address of addresses) {
      const refusal = policy.refusal(address);
      if (refusal) throw refusedError(refusal);
    }
  }
  return addresses;
}

export interface CheckedConnectorOptions {
  /** Null skips the address policy (operator-configured, trusted destinations). */
  policy: AddressPolicy | null;
  resolve: Resolver;
  /** Extra CA certificates for TLS (a private portal CA; tests). */
  ca?: string | Buffer | Array<string | Buffer> | undefined;
  allowH2?: boolean;
  /** Bounds the resolver; a connection is shared by requests, so no single request's timeout applies. Default 10 000. */
  resolveTimeoutMs?: number;
}

function withTimeout<T>(promise: Promise<T>, ms: number, name: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new OutboundNetworkError(`resolving ${name} took over ${ms} ms`)), ms);
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}

/**
 * An undici connector that resolves and checks first, then hands undici's own connector the
 * checked IP, keeping the original name for SNI and certificate verification. Addresses are
 * tried in the resolver's order until one accepts.
 */
export function createCheckedConnector(options: CheckedConnectorOptions): buildConnector.connector {
  const base = buildConnector({
    ...(options.ca === undefined ? {} : { ca: options.ca }),
    allowH2: options.allowH2 ?? false,
  });
  const resolveTimeoutMs = options.resolveTimeoutMs ?? 10_000;
  return (opts, callback) => {
    const name = unbracket(opts.hostname);
    const servername = opts.servername || (isIP(name) === 0 ? name : undefined);
    withTimeout(resolveChecked(name, options.policy, options.resolve), resolveTimeoutMs, name).then(
      (addresses) => {
        const attempt = (index: number) => {
          base({ ...opts, hostname: addresses[index]!, servername }, (err, socket) => {
            if (err && index + 1 < addresses.length) return attempt(index + 1);
            if (err) return callback(err, null);
            callback(null, socket!);
          });
        };
        attempt(0);
      },
      (err: Error) => callback(err, null),
    );
  };
}

/** The connector as a promise, for the node:http2 path. */
export function connectChecked(connector: buildConnector.connector, url: URL): Promise<Socket> {
  return new Promise((resolve, reject) => {
    connector({ hostname: url.hostname, host: url.host, protocol: url.protocol, port: url.port }, (err, socket) => (err ? reject(err) : resolve(socket!)));
  });
}
