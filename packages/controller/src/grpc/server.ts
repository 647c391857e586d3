import { readFile } from "node:fs/promises";
import { grpc, loadAgentService } from "@rlc/proto";
import { ConfigError } from "../config.js";
import type { AgentService } from "./agent-service.js";

export interface GrpcListenOptions {
  host: string;
  /** 0 = a free port, picked by the kernel. */
  port: number;
  /** PEM files (GRPC_TLS_CERT, GRPC_TLS_KEY); null = plaintext. */
  tls: { certFile: string; keyFile: string } | null;
}

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
  let credentials = grpc.ServerCredentials.createInsecure();
  if (options.tls) {
    const [cert, key] = await Promise.all([readFile(options.tls.certFile), readFile(options.tls.keyFile)]);
    credentials = grpc.ServerCredentials.createSsl(null, [{ cert_chain: cert, private_key: key }], false);
  }
  // Bundles travel in chunks of at most 1 MiB; reports stay far below grpc-js's 4 MiB default.
  const server = new grpc.Server({ "grpc.max_send_message_length": 4 * 1024 * 1024 });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(hostPort(options.host, options.port), credentials, (error, bound) => (error ? reject(error) : resolve(bound))),
  );
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

/** GRPC_TLS_CERT and GRPC_TLS_KEY go together. */
export function grpcTlsOf(config: { GRPC_TLS_CERT?: string | undefined; GRPC_TLS_KEY?: string | undefined }): GrpcListenOptions["tls"] {
  const { GRPC_TLS_CERT: certFile, GRPC_TLS_KEY: keyFile } = config;
  if (!certFile && !keyFile) return null;
  if (!certFile || !keyFile) {
    throw new ConfigError(`invalid configuration:\n  ${certFile ? "GRPC_TLS_KEY" : "GRPC_TLS_CERT"}: GRPC_TLS_CERT and GRPC_TLS_KEY go together (PEM certificate chain and its private key)`);
  }
  return { certFile, keyFile };
}
