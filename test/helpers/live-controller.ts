import type { AddressInfo } from "node:net";
import type { InjectOptions, LightMyRequestResponse } from "fastify";
import { loadConfig } from "../../packages/controller/src/config.js";
import { type Controller, startController } from "../../packages/controller/src/controller.js";
import { grpc } from "../../packages/proto/src/index.js";
import { createTestDatabase, type TestDatabase } from "./db.js";

// A controller as agents meet it: its own migrated database, HTTP listening on a free loopback
// port, the gRPC AgentService on another (GRPC_PORT=0) and the agents' HTTPS on a third
// (NODE_HTTPS_PORT=0), for tests that talk to it over the network (gRPC clients, rl-agent
// processes) rather than through app.inject.

export interface LiveController {
  controller: Controller;
  db: TestDatabase;
  /** `http://127.0.0.1:<port>`. */
  url: string;
  /** `https://127.0.0.1:<port>` of the agents' HTTPS listener (node routes, the gRPC certificate). */
  nodeUrl: string;
  /** `127.0.0.1:<port>` of the gRPC listener. */
  grpcAddress: string;
  /** The controller's own gRPC CA (PEM), null when gRPC is plaintext or configured from files. */
  caPem: string | null;
  /** Client credentials that trust the controller's gRPC listener (plaintext when it is). */
  grpcCredentials: grpc.ChannelCredentials;
  /** The bootstrap superadmin key of tenant `default`. */
  rootKey: string;
  /** `app.inject` with a Bearer key (null: none). */
  call(key: string | null, method: InjectOptions["method"], url: string, payload?: object): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

export async function startLiveController(opts: { env?: Record<string, string> } = {}): Promise<LiveController> {
  const db = await createTestDatabase();
  try {
    const config = loadConfig({
      DATABASE_URL: db.url,
      LOG_LEVEL: "silent",
      GRPC_HOST: "127.0.0.1",
      GRPC_PORT: "0",
      NODE_HTTPS_HOST: "127.0.0.1",
      NODE_HTTPS_PORT: "0",
      ...opts.env,
    });
    const controller = await startController(config, { logger: false, grpc: true, nodeHttps: true });
    await controller.app.listen({ host: "127.0.0.1", port: 0 });
    const port = (controller.app.server.address() as AddressInfo).port;
    const [tls] = controller.grpc?.tls ? await controller.db.sql<{ ca_pem: string }[]>`SELECT ca_pem FROM grpc_tls` : [];
    const caPem = tls?.ca_pem ?? null;
    return {
      caPem,
      grpcCredentials: caPem ? grpc.credentials.createSsl(Buffer.from(caPem)) : grpc.credentials.createInsecure(),
      controller,
      db,
      url: `http://127.0.0.1:${port}`,
      nodeUrl: controller.nodeHttps ? `https://127.0.0.1:${controller.nodeHttps.port}` : "",
      grpcAddress: controller.grpc?.address ?? "",
      rootKey: controller.bootstrap.secret!,
      call(key, method, url, payload) {
        return controller.app.inject({ method, url, headers: key ? { authorization: `Bearer ${key}` } : {}, ...(payload ? { payload } : {}) });
      },
      async close() {
        await controller.close();
        await db.drop();
      },
    };
  } catch (error) {
    await db.drop().catch(() => undefined);
    throw error;
  }
}

export { until, untilJobDone } from "./wait.js";
