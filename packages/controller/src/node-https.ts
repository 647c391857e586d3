import type { ServerResponse } from "node:http";
import { createServer } from "node:https";
import type { AddressInfo } from "node:net";
import type { FastifyInstance } from "fastify";
import { httpTimeouts } from "./app.js";
import type { Config } from "./config.js";
import { hostPort } from "./grpc/server.js";
import { problemBody } from "./lib/problem.js";
import { clientErrorHandler } from "./plugins/errors.js";

/**
 * What an agent asks over HTTP, and nothing else: enrollment, signing keys, its speaker's
 * desired revision, bundle and status report, and the health check of its probation. Matched on
 * the raw request line, strictly (no other spelling gets through to the app), before Fastify
 * routes it; the app then checks keys and roles as on HTTP_PORT.
 */
const NODE_REQUESTS: [method: string, path: RegExp][] = [
  ["POST", /^\/v1\/nodes\/enroll$/],
  ["GET", /^\/v1\/nodes\/signing-keys$/],
  ["GET", /^\/v1\/speakers\/[0-9A-Za-z-]{1,64}\/revisions\/latest$/],
  ["GET", /^\/v1\/speakers\/[0-9A-Za-z-]{1,64}\/bundle\/[0-9]{1,10}$/],
  ["POST", /^\/v1\/speakers\/[0-9A-Za-z-]{1,64}\/status$/],
  ["GET", /^\/v1\/health$/],
];

export function isNodeRequest(method: string | undefined, url: string | undefined): boolean {
  const target = url ?? "";
  const q = target.indexOf("?");
  const path = q < 0 ? target : target.slice(0, q);
  return NODE_REQUESTS.some(([m, re]) => m === method && re.test(path));
}

function notNodeRequest(res: ServerResponse): void {
  const body = JSON.stringify(problemBody("not_found", "this listener serves the agents' node routes only; the API is on HTTP_PORT"));
  res.writeHead(404, {
    "content-type": "application/problem+json",
    "content-length": Buffer.byteLength(body),
    "x-content-type-options": "nosniff",
  });
  res.end(body);
}

export interface NodeHttpsListener {
  /** The port bound: the one asked for, or the one the kernel picked for 0. */
  readonly port: number;
  /** `host:port` as bound. */
  readonly address: string;
  /** Stops taking connections, lets requests in flight finish for up to `graceMs`, then cuts the rest. */
  close(graceMs?: number): Promise<void>;
}

/**
 * The agents' HTTPS listener (NODE_HTTPS_HOST, NODE_HTTPS_PORT): the node routes of `app`,
 * served with the certificate of the gRPC listener, so that the one CA an enrollment token pins
 * covers both and an agent needs no RL_INSECURE when the API itself is plain HTTP. The same
 * timeouts as HTTP_PORT; a TLS handshake must end within 10 s, as on gRPC.
 */
export async function listenNodeHttps(o: {
  app: FastifyInstance;
  host: string;
  port: number;
  tls: { cert: Buffer; key: Buffer };
  config: Config;
}): Promise<NodeHttpsListener> {
  // Routing needs the app's routes in place; a request may come before the API listens.
  await o.app.ready();
  const timeouts = httpTimeouts(o.config);
  const server = createServer(
    {
      cert: o.tls.cert,
      key: o.tls.key,
      handshakeTimeout: 10_000,
      requestTimeout: timeouts.requestTimeout,
      keepAliveTimeout: timeouts.keepAliveTimeout,
      ...timeouts.http,
    },
    (req, res) => (isNodeRequest(req.method, req.url) ? o.app.routing(req, res) : notNodeRequest(res)),
  );
  server.setTimeout(timeouts.connectionTimeout ?? 0);
  server.on("clientError", clientErrorHandler.bind(o.app));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(o.port, o.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  let closing: Promise<void> | null = null;
  return {
    port,
    address: hostPort(o.host, port),
    close(graceMs = 2000) {
      closing ??= new Promise<void>((resolve) => {
        const timer = setTimeout(() => server.closeAllConnections(), graceMs);
        server.close(() => {
          clearTimeout(timer);
          resolve();
        });
        server.closeIdleConnections();
      });
      return closing;
    },
  };
}
