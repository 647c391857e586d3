import { createServer } from "node:net";
import { afterEach } from "vitest";
import { AgentGrpcClient } from "../../packages/agent/src/bundle/grpc-client.js";
import { silentLogger } from "../../packages/agent/src/log.js";
import { grpc, loadAgentService, type StatusReport } from "../../packages/proto/src/index.js";
import { createSystemClock } from "../../packages/shared/src/time.js";
import { type StandInController, startStandInController } from "./stand-in-controller.js";

// The set-up of the tests of the agent's controller clients: stand-in controllers and gRPC
// clients that end after each test, an address where nothing listens, and a status report.

/** Registers an afterEach that runs what `cleanups` holds, last first; call it at a test file's top. */
export function standInSetup() {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });
  return {
    cleanups,
    /** A stand-in controller (options as startStandInController's), closed after the test. */
    async controller(options: { grpc?: boolean } = {}): Promise<StandInController> {
      const c = await startStandInController(options);
      cleanups.push(() => c.close());
      return c;
    },
    /** The agent's gRPC client (plaintext, short backoff) of one address or several replicas. */
    grpcClient(o: {
      address: string | string[];
      nodeKey: string;
      speakerId: string;
      onEndpoint?: (address: string) => void;
      watchIdleMs?: number;
    }): AgentGrpcClient {
      const client = new AgentGrpcClient({
        address: o.address,
        credentials: grpc.credentials.createInsecure(),
        nodeKey: o.nodeKey,
        speakerId: o.speakerId,
        service: loadAgentService(),
        clock: createSystemClock(),
        log: silentLogger,
        backoff: { baseMs: 50, maxMs: 200 },
        ...(o.onEndpoint ? { onEndpoint: o.onEndpoint } : {}),
        ...(o.watchIdleMs ? { watchIdleMs: o.watchIdleMs } : {}),
      });
      cleanups.push(() => client.close());
      return client;
    },
  };
}

/** An address where nothing listens: gRPC down, a replica that is gone. */
export async function deadAddress(): Promise<string> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  await new Promise((r) => server.close(r));
  return `127.0.0.1:${port}`;
}

/** A status report with BIRD unreachable and no sessions. */
export function statusReport(speakerId: string, reason: StatusReport["reason"], pollId: string | null = null): StatusReport {
  return {
    speaker_id: speakerId,
    reason,
    poll_id: pollId,
    applied_revision_id: null,
    applied_sequence: null,
    applied_digest: null,
    applied_at: null,
    error: null,
    bird: { reachable: false, version: null, router_id: null, server_time: null, last_reconfiguration: null },
    sessions: [],
    agent_version: "test",
    reported_at: new Date().toISOString(),
  };
}
