import type { ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CURRENT_ANNOUNCEMENT } from "@rlc/shared/bundle";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startAgentProcess } from "../helpers/agent-process.js";
import { type BirdLab, lastReconfiguration, type Rib, readRibs, sameReconfiguration, startBirdLab, stopProcess, waitForRibs } from "../helpers/bird-lab.js";
import { describeEachBird } from "../helpers/bird-versions.js";
import { type LiveController, startLiveController, until, untilJobDone } from "../helpers/live-controller.js";

// Upgrades in either order (issue 25), on a real BIRD with GoBGP as its peer: an agent of the
// release before (RL_BUNDLE_FORMATS=rl-bundle/1: it announces nothing and reads rl-bundle/1
// only) applies through this controller; upgraded in place to this agent, and restarted, it
// leaves BIRD's configuration alone when nothing changed, then applies rl-bundle/2; and this
// agent applies through a controller that sends rl-bundle/1 only (BUNDLE_FORMATS=rl-bundle/1).

const natsUrl = process.env.TEST_NATS_URL || "nats://127.0.0.1:4222";

describeEachBird(
  "upgrades in either order: controller + rl-agent of either release + BIRD + GoBGP",
  ["gobgpd", "gobgp"],
  (b) => {
    let dir = "";
    let lab: BirdLab;
    let t: LiveController | null = null;
    let agent: { child: ChildProcess; log(): string } | null = null;
    let speakerId = "";
    let token = "";
    let moduleId = "";

    const ok = async (method: "GET" | "POST" | "PATCH", url: string, payload?: object) => {
      const res = await t!.call(t!.rootKey, method, url, payload);
      if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
      return res.json();
    };
    const refresh = async () => (await ok("POST", "/v1/modules/refresh?wait=true")).result.revision_id as number;
    const apply = async () => untilJobDone(t!, (await ok("POST", "/v1/apply", { timeout_seconds: 60 })).job_id, 70_000);
    const speaker = () => ok("GET", `/v1/speakers/${speakerId}`);
    async function ribsOf(revisionId: number): Promise<[Rib, Rib]> {
      const page = await ok("GET", `/v1/revisions/${revisionId}/prefixes?limit=500`);
      const out: [Rib, Rib] = [{}, {}];
      for (const p of page.items) out[p.family === 4 ? 0 : 1][p.prefix] = [...p.communities].sort();
      return out;
    }

    /** A controller (`env`: its settings), a speaker on this BIRD with the GoBGP peer, a module with one range. */
    async function controllerWithSpeaker(env: Record<string, string>, name: string) {
      t = await startLiveController({ env: { NATS_URL: natsUrl, ...env } });
      const s = await ok("POST", "/v1/speakers", {
        name,
        mode: "remote",
        router_id: "127.0.0.1",
        asn: 65000,
        policies_json: { local_ip: "127.0.0.1", local_port: lab.birdPort, next_hop_ipv4: "198.51.100.254", next_hop_ipv6: "2001:db8::254" },
      });
      speakerId = s.id;
      token = s.enrollment_token;
      await ok("PATCH", "/v1/settings", { BIRD: { confirm_after_seconds: 2 } });
      await ok("POST", "/v1/peers", {
        name: "gobgp",
        neighbor_address: "127.0.0.2",
        neighbor_port: lab.gobgpPort,
        remote_asn: 65001,
        multihop: true,
        speaker_ids: [speakerId],
      });
      const community = await ok("POST", "/v1/communities", { community: "65000:100", title: "vpn" });
      moduleId = (await ok("POST", "/v1/modules", { name: "ranges", type: "IP_RANGES", community_id: community.id })).id;
      await ok("POST", `/v1/modules/${moduleId}/ip-range-entries`, { cidr: "11.1.0.0/16" });
    }

    function startAgent(state: string, env: Record<string, string> = {}) {
      agent = startAgentProcess({
        controllerUrl: t!.url,
        enrollmentToken: token,
        dir: state,
        etc: join(dir, "etc"),
        env: { ...(b.env as Record<string, string>), RL_BIRD_BIN: b.bird, BIRD_CONTROL_SOCKET: join(dir, "bird.ctl"), ...env },
      });
      return agent;
    }

    async function stopAgent() {
      if (agent) await stopProcess(agent.child);
      agent = null;
    }

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), "rl-e2e-upgrade-"));
      mkdirSync(join(dir, "etc"));
      lab = await startBirdLab(dir, join(dir, "etc"), b.bird);
    }, 60_000);

    afterAll(async () => {
      await stopAgent();
      await t?.close();
      await lab?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    }, 60_000);

    it("an agent of the release before (rl-bundle/1 only, announcing nothing) applies through this controller; the speaker warns that it is old", async () => {
      await controllerWithSpeaker({}, "edge-old-agent");
      const state = join(dir, "agent-a");
      startAgent(state, { RL_BUNDLE_FORMATS: "rl-bundle/1" });
      const revision = await refresh();
      const job = await apply();
      expect(job, agent!.log()).toMatchObject({ status: "succeeded", result: { speakers: [{ speaker_id: speakerId, status: "applied" }] } });
      const expected = await ribsOf(revision);
      expect(await waitForRibs(lab.apiPort, expected, 30_000)).toEqual(expected);
      // It refuses an rl-bundle/2 at its head: what it applied was an rl-bundle/1.
      expect(agent!.log()).not.toMatch(/unsupported_format/);
      expect(await speaker()).toMatchObject({ agent_accepts: null, warnings: [expect.objectContaining({ code: "agent_outdated" })] });
      const metrics = (await t!.call(null, "GET", "/metrics")).body;
      expect(Number(/^rlc_bundles_served_total\{format="rl-bundle\/1"\} (\d+)/m.exec(metrics)?.[1])).toBeGreaterThan(0);
    }, 120_000);

    it("upgraded in place, then restarted, this agent leaves BIRD's Last reconfiguration untouched while nothing changed; the next apply comes as rl-bundle/2", async () => {
      const state = join(dir, "agent-a");
      const before = await lastReconfiguration(lab.birdc);
      const ribs = await readRibs(lab.apiPort);
      await stopAgent();
      // The upgrade: this release's agent on the same state directory.
      startAgent(state);
      // Started from its sources, an agent takes a while on a loaded machine.
      await until("the upgraded agent to announce itself", async () => (await speaker()).agent_accepts?.bundle_formats?.includes("rl-bundle/2"), 90_000);
      expect((await speaker()).agent_accepts).toEqual(CURRENT_ANNOUNCEMENT);
      await until(
        "the upgraded agent's stream to be up",
        async () => agent!.log().includes("gRPC watch stream up") && (await speaker()).sync_status === "in_sync",
        60_000,
      );
      // Long enough for a sync it would do at start (Watch's first event, the first poll).
      await new Promise((r) => setTimeout(r, 3000));
      expect(sameReconfiguration(await lastReconfiguration(lab.birdc), before), agent!.log()).toBe(true);
      expect((await speaker()).warnings).toEqual([]);
      // Told the digest it knows the running bundle by (an rl-bundle/1's), it fetches nothing.
      expect(agent!.log()).not.toMatch(/sync: fetching bundle/);

      await stopAgent();
      startAgent(state);
      await until("the restarted agent's stream to be up", async () => agent!.log().includes("gRPC watch stream up"), 90_000);
      await new Promise((r) => setTimeout(r, 3000));
      expect(sameReconfiguration(await lastReconfiguration(lab.birdc), before), agent!.log()).toBe(true);
      expect(await readRibs(lab.apiPort)).toEqual(ribs);
      expect(agent!.log()).not.toMatch(/sync: fetching bundle/);

      await ok("POST", `/v1/modules/${moduleId}/ip-range-entries`, { cidr: "12.2.0.0/16" });
      const revision = await refresh();
      const job = await apply();
      expect(job, agent!.log()).toMatchObject({ status: "succeeded" });
      const expected = await ribsOf(revision);
      expect(await waitForRibs(lab.apiPort, expected, 30_000)).toEqual(expected);
      const metrics = (await t!.call(null, "GET", "/metrics")).body;
      expect(Number(/^rlc_bundles_served_total\{format="rl-bundle\/2"\} (\d+)/m.exec(metrics)?.[1])).toBeGreaterThan(0);
    }, 300_000);

    it("this agent applies through a controller that sends rl-bundle/1 only (BUNDLE_FORMATS=rl-bundle/1)", async () => {
      await stopAgent();
      await t?.close();
      t = null;
      await controllerWithSpeaker({ BUNDLE_FORMATS: "rl-bundle/1" }, "edge-old-controller");
      startAgent(join(dir, "agent-b"));
      const revision = await refresh();
      const job = await apply();
      expect(job, agent!.log()).toMatchObject({ status: "succeeded", result: { speakers: [{ speaker_id: speakerId, status: "applied" }] } });
      const expected = await ribsOf(revision);
      expect(await waitForRibs(lab.apiPort, expected, 30_000)).toEqual(expected);
      const metrics = (await t!.call(null, "GET", "/metrics")).body;
      expect(Number(/^rlc_bundles_served_total\{format="rl-bundle\/1"\} (\d+)/m.exec(metrics)?.[1])).toBeGreaterThan(0);
      expect(Number(/^rlc_bundles_served_total\{format="rl-bundle\/2"\} (\d+)/m.exec(metrics)?.[1])).toBe(0);
    }, 150_000);
  },
  // 2.17 behaves as 2.0 in all this looks at (docs/testing.md).
  { except: ["2.17"] },
);
