import type { Server as NetServer, Socket } from "node:net";
import { grpc, loadAgentService } from "@rlc/proto";
import { ConfigError } from "../config.js";
import type { AgentService } from "./agent-service.js";

export interface GrpcListenOptions {
  host: string;
  /** 0 = a free port, picked by the kernel. */
  port: number;
  /** PEM chain and key (see tls.ts); null = plaintext. */
  tls: { cert: Buffer; key: Buffer } | null;
  /** Connection limits; tests make them short. */
  connection?: Partial<ConnectionLimits>;
}

/** What one connection may hold and for how long. */
export interface ConnectionLimits {
  /** Streams open at once on one HTTP/2 connection. */
  maxStreams: number;
  /** A connection with no call for this long is closed (an agent keeps its Watch open). */
  idleMs: number;
  /** A connection is asked to go away after this long (the agent reconnects), then cut after `ageGraceMs`. */
  ageMs: number;
  ageGraceMs: number;
  /** HTTP/2 PING period and how long its answer may take before the connection is dropped. */
  keepaliveMs: number;
  keepaliveTimeoutMs: number;
  /** A TLS handshake that has not finished by then is dropped (a socket that connects and sends nothing). */
  handshakeMs: number;
  /** The largest request message: the same 1 MiB as an HTTP request body. */
  maxRequestBytes: number;
  /** Connections open at once from one client address; more are closed before any handshake. */
  perAddress: number;
}

export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = {
  maxStreams: 16,
  idleMs: 5 * 60_000,
  ageMs: 24 * 3600_000,
  ageGraceMs: 60_000,
  keepaliveMs: 60_000,
  keepaliveTimeoutMs: 20_000,
  handshakeMs: 10_000,
  maxRequestBytes: 1024 * 1024,
  perAddress: 64,
};

export interface GrpcListener {
  /** The port bound: the one asked for, or the one the kernel picked for 0. */
  readonly port: number;
  /** `host:port` as bound (`[v6]:port` for IPv6). */
  readonly address: string;
  readonly tls: boolean;
  /** Adds AgentService; calls before it answer UNIMPLEMENTED. */
  serve(service: AgentService): void;
  /** Ends the Watch streams, lets calls in flight finish for up to `graceMs`, then cuts the rest. */
  close(graceMs?: number): Promise<void>;
}

export const hostPort = (host: string, port: number) => (host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`);

/**
 * Binds the gRPC server before the services exist, so that with GRPC_PORT=0 the port the agents
 * are told at enrollment is the one bound; `serve` then adds the service. TLS when both PEM
 * files are given; one without the other is a configuration error.
 */
export async function listenGrpc(options: GrpcListenOptions): Promise<GrpcListener> {
  const limits = { ...DEFAULT_CONNECTION_LIMITS, ...options.connection };
  let credentials = grpc.ServerCredentials.createInsecure();
  if (options.tls) {
    credentials = grpc.ServerCredentials.createSsl(null, [{ cert_chain: options.tls.cert, private_key: options.tls.key }], false);
    // grpc-js has no option for the TLS handshake timeout (Node's default is 120 s); its
    // credentials hand this object to tls.createServer as is.
    const constructorOptions = (credentials as unknown as { _getConstructorOptions?: () => Record<string, unknown> | null })._getConstructorOptions?.();
    if (constructorOptions) {
      constructorOptions.handshakeTimeout = limits.handshakeMs;
      // No HPACK dynamic tables, either way: each connection's tables would hold the headers of
      // its calls (about 1.3 KiB a connection, measured), and an agent makes a few calls an
      // apply, for which headers sent in full cost a few hundred bytes. These settings replace
      // the ones grpc-js derives from its options, hence the stream limit here too.
      constructorOptions.settings = { maxConcurrentStreams: limits.maxStreams, headerTableSize: 0 };
      constructorOptions.maxDeflateDynamicTableSize = 0;
    }
  }
  const server = new grpc.Server({
    // Bundles travel in chunks of at most 1 MiB.
    "grpc.max_send_message_length": 4 * 1024 * 1024,
    "grpc.max_receive_message_length": limits.maxRequestBytes,
    "grpc.max_concurrent_streams": limits.maxStreams,
    "grpc.max_connection_idle_ms": limits.idleMs,
    "grpc.max_connection_age_ms": limits.ageMs,
    "grpc.max_connection_age_grace_ms": limits.ageGraceMs,
    "grpc.keepalive_time_ms": limits.keepaliveMs,
    "grpc.keepalive_timeout_ms": limits.keepaliveTimeoutMs,
    // Channelz (grpc-js's own introspection, which nothing here reads) registers and traces every
    // connection and call: memory and work per agent for a thousand agents, for no reader.
    "grpc.enable_channelz": 0,
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(hostPort(options.host, options.port), credentials, (error, bound) => (error ? reject(error) : resolve(bound))),
  );
  guardConnections(server, { silentMs: options.tls ? null : limits.handshakeMs, perAddress: limits.perAddress });
  if (options.tls) releaseHandshakeOptions(server);
  let service: AgentService | null = null;
  let closing: Promise<void> | null = null;
  return {
    port,
    address: hostPort(options.host, port),
    tls: options.tls !== null,
    serve(s) {
      if (service) throw new Error("AgentService is already served");
      service = s;
      server.addService(loadAgentService().service, s.handlers);
    },
    close(graceMs = 2000) {
      closing ??= new Promise<void>((resolve) => {
        service?.endWatches();
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
      return closing;
    },
  };
}

/**
 * Checks on the raw connections, before TLS or HTTP/2 cost anything: at most `perAddress` open
 * from one client address (one router needs one; a flood of connections would each cost a
 * handshake on the event loop), and, in plaintext, a connection that sent not one byte within
 * `silentMs` is dropped (over TLS, the handshake timeout does this). grpc-js offers neither
 * option, so the checks sit on its HTTP/2 servers' connection events.
 */
function guardConnections(server: grpc.Server, o: { silentMs: number | null; perAddress: number }): void {
  const open = new Map<string, number>();
  const listeners = (server as unknown as { http2Servers?: Map<NetServer, unknown> }).http2Servers;
  for (const listener of listeners?.keys() ?? []) {
    // Before grpc-js's and Node's own listeners, so a refused socket costs nothing more.
    listener.prependListener("connection", (socket: Socket) => {
      const address = socket.remoteAddress ?? "";
      const n = open.get(address) ?? 0;
      if (n >= o.perAddress) {
        socket.destroy();
        return;
      }
      open.set(address, n + 1);
      socket.once("close", () => {
        const left = (open.get(address) ?? 1) - 1;
        if (left <= 0) open.delete(address);
        else open.set(address, left);
      });
      if (o.silentMs === null) return;
      const timer = setTimeout(() => {
        if (socket.bytesRead === 0) socket.destroy();
      }, o.silentMs);
      timer.unref();
      socket.once("close", () => clearTimeout(timer));
    });
  }
}

/**
 * Node gives each TLS connection its own copy of the server's ALPN list (`Buffer.from`: a slice
 * of the shared 8 KiB Buffer pool) and keeps it in the socket's options for the connection's
 * life, though only the handshake reads it. Such small slices, made between other short-lived
 * allocations, each keep a whole pool slab alive: about 4 KiB a connection with a thousand
 * agents connected (heap snapshot of bench/fanout.mjs). Dropped once the handshake is done.
 */
function releaseHandshakeOptions(server: grpc.Server): void {
  const listeners = (server as unknown as { http2Servers?: Map<NetServer, unknown> }).http2Servers;
  for (const listener of listeners?.keys() ?? []) {
    listener.on("secureConnection", (socket: { _tlsOptions?: { ALPNProtocols?: unknown } }) => {
      if (socket._tlsOptions) socket._tlsOptions.ALPNProtocols = undefined;
    });
  }
}

/** GRPC_TLS_CERT and GRPC_TLS_KEY go together. */
export function grpcTlsOf(config: { GRPC_TLS_CERT?: string | undefined; GRPC_TLS_KEY?: string | undefined }): { certFile: string; keyFile: string } | null {
  const { GRPC_TLS_CERT: certFile, GRPC_TLS_KEY: keyFile } = config;
  if (!certFile && !keyFile) return null;
  if (!certFile || !keyFile) {
    throw new ConfigError(
      `invalid configuration:\n  ${certFile ? "GRPC_TLS_KEY" : "GRPC_TLS_CERT"}: GRPC_TLS_CERT and GRPC_TLS_KEY go together (PEM certificate chain and its private key)`,
    );
  }
  return { certFile, keyFile };
}
