import type { ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startAgentProcess } from "./agent-process.js";
import { type BirdLab, startBirdLab, stopProcess } from "./bird-lab.js";
import { type LiveController, startLiveController, untilJobDone } from "./live-controller.js";
import { until } from "./wait.js";

// What the browser tests look at: a listening controller, BIRD driven by an enrolled rl-agent,
// and GoBGP as the peer whose session turns Established once a revision is applied.

export interface ConsoleLab {
  t: LiveController;
  speakerId: string;
  /** A viewer key of tenant `default`. */
  viewerKey: string;
  agentLog(): string;
  /** A /v1 call with the superadmin key; throws on an error status. */
  ok(method: "GET" | "POST" | "PATCH" | "DELETE", url: string, payload?: object): Promise<any>;
  close(): Promise<void>;
}

export async function startConsoleLab(env: Record<string, string>): Promise<ConsoleLab> {
  const dir = mkdtempSync(join(tmpdir(), "rl-console-"));
  const etc = join(dir, "etc");
  mkdirSync(etc);
  let bird: BirdLab | null = null;
  let agent: { child: ChildProcess; log(): string } | null = null;
  let t: LiveController | null = null;
  const close = async () => {
    if (t) {
      for (const job of (await t.call(t.rootKey, "GET", "/v1/jobs?status=awaiting")).json().items ?? [])
        await t.call(t.rootKey, "POST", `/v1/jobs/${job.job_id}/cancel`);
    }
    await stopProcess(agent?.child ?? null);
    await bird?.stop();
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    bird = await startBirdLab(dir, etc);
    t = await startLiveController({ env });
    const live = t;
    const ok = async (method: "GET" | "POST" | "PATCH" | "DELETE", url: string, payload?: object) => {
      const res = await live.call(live.rootKey, method, url, payload);
      if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
      return res.statusCode === 204 ? null : res.json();
    };
    const speaker = await ok("POST", "/v1/speakers", {
      name: "edge-lab",
      mode: "remote",
      router_id: "127.0.0.1",
      asn: 65000,
      // GoBGP drops routes whose next hop is a loopback address.
      policies_json: { local_ip: "127.0.0.1", local_port: bird.birdPort, next_hop_ipv4: "198.51.100.254", next_hop_ipv6: "2001:db8::254" },
    });
    await ok("PATCH", "/v1/settings", { BIRD: { confirm_after_seconds: 2 } });
    agent = startAgentProcess({ controllerUrl: live.url, enrollmentToken: speaker.enrollment_token, dir, etc });
    // The agent starts from its sources (tsx compiles them first): slow on a busy 2-core machine.
    const enrolling = agent;
    await until("the agent to enroll", async () => (await ok("GET", `/v1/speakers/${speaker.id}`)).enrolled_at, 90_000, 250).catch((error: Error) => {
      throw new Error(`${error.message}; agent log: ${enrolling.log().slice(-2000)}`);
    });
    const peer = await ok("POST", "/v1/peers", {
      name: "gobgp",
      neighbor_address: "127.0.0.2",
      neighbor_port: bird.gobgpPort,
      remote_asn: 65001,
      multihop: true,
      speaker_ids: [speaker.id],
    });
    await untilJobDone(live, peer.reconcile_job_id);
    const viewer = await ok("POST", "/v1/api-keys", { name: "console viewer", role: "viewer" });
    const a = agent;
    return { t: live, speakerId: speaker.id, viewerKey: viewer.secret, agentLog: () => a.log(), ok, close };
  } catch (error) {
    await close().catch(() => undefined);
    throw error;
  }
}
