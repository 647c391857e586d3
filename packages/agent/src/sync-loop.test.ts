import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SigningKeyJson, StatusErrorJson } from "@rlc/proto";
import { type BundleContent, signKeyStatement, type SigningKeyPair } from "@rlc/shared/bundle";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  fakeBird,
  fixtureContent,
  issueBundle,
  okRunner,
  reply,
  SPEAKER_ID,
  storedKey,
  TENANT_ID,
  testKey,
} from "../../../test/helpers/agent-fakes.js";
import { groupId } from "./atomic-file.js";
import { BirdError } from "./bird/birdc.js";
import type { ProcessRunner } from "./bird/validate.js";
import { ControllerError, type DesiredRevision } from "./bundle/http-client.js";
import { AgentMetrics } from "./http/metrics.js";
import { silentLogger } from "./log.js";
import { StateStore } from "./state.js";
import { SyncLoop, type SyncLoopOptions } from "./sync-loop.js";
import { createSystemClock } from "./timing.js";

interface Harness {
  loop: SyncLoop;
  bird: ReturnType<typeof fakeBird>;
  state: StateStore;
  configPath: string;
  bundles: Map<number, Uint8Array>;
  desired: { current: DesiredRevision | null };
  calls: { latest: number; fetch: number[] };
  reports: { reason: string; error: StatusErrorJson | null }[];
  listedKeys: SigningKeyJson[];
  metrics: AgentMetrics;
  /** Holds every fetch until released. */
  gate: { wait: Promise<void> | null };
}

let dir = "";
let key: SigningKeyPair;
let content: BundleContent;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "rl-sync-"));
  key = await testKey();
  content = fixtureContent();
  // No window unless a test asks for one: the probation's own tests do.
  content.bird.confirm_after_seconds = 0;
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function harness(overrides: Partial<SyncLoopOptions> = {}): Promise<Harness> {
  const state = new StateStore(join(dir, "state"));
  await state.init();
  await state.writeSigningKeys([storedKey(key)]);
  mkdirSync(join(dir, "etc"), { recursive: true });
  const configPath = join(dir, "etc", "rl-routes.conf");
  writeFileSync(configPath, "# operator's empty include\n");
  const bird = fakeBird(configPath);
  const h = {
    bird,
    state,
    configPath,
    bundles: new Map<number, Uint8Array>(),
    desired: { current: null as DesiredRevision | null },
    calls: { latest: 0, fetch: [] as number[] },
    reports: [] as Harness["reports"],
    listedKeys: [] as SigningKeyJson[],
    metrics: new AgentMetrics({ version: "test", speakerId: SPEAKER_ID }),
    gate: { wait: null as Promise<void> | null },
  };
  let error: StatusErrorJson | null = null;
  const loop = new SyncLoop({
    client: {
      latest: async () => {
        h.calls.latest++;
        return h.desired.current;
      },
      fetchBundle: async (revisionId) => {
        h.calls.fetch.push(revisionId);
        await h.gate.wait;
        const bytes = h.bundles.get(revisionId);
        if (!bytes) throw new ControllerError("not_found", `no bundle ${revisionId}`);
        return bytes;
      },
      signingKeys: async () => h.listedKeys,
    },
    state,
    reporter: {
      setError: (e) => {
        error = e;
      },
      report: async (reason) => {
        h.reports.push({ reason, error });
        return true;
      },
    },
    bird,
    runner: okRunner,
    metrics: h.metrics,
    clock: createSystemClock(),
    log: silentLogger,
    speakerId: SPEAKER_ID,
    tenantId: TENANT_ID,
    birdMode: "include",
    birdConfigPath: configPath,
    stagingDir: join(dir, "staging"),
    healthWaitMs: 0,
    retry: { baseMs: 20, maxMs: 50 },
    ...overrides,
  });
  return Object.assign(h, { loop });
}

/** Makes `revision` (signed as given) the one the controller names. */
async function publish(h: Harness, revision: number, sequence: number, extra: Partial<Parameters<typeof issueBundle>[1]> = {}) {
  const issued = await issueBundle({ ...content, revision_id: revision }, { sequence, key, ...extra });
  h.bundles.set(revision, issued.bytes);
  h.desired.current = issued.desired;
  return issued;
}

describe("SyncLoop", () => {
  it("sync - fetch, verify, render, bird -p, baseline, configure timeout, probation, confirm, record, report — in that order", async () => {
    const validated: string[] = [];
    const runner: ProcessRunner = async (file, args) => {
      validated.push(`${file} ${args.join(" ")}`);
      return okRunner(file, args);
    };
    const h = await harness({ runner });
    const { bytes } = await publish(h, 1, 1);
    expect(await h.loop.sync({ reason: "start" })).toBe("applied");
    expect(validated).toEqual([expect.stringMatching(/^bird -p -c .*staging.*rl-validate\.conf$/)]);
    expect(h.bird.commands).toEqual(["show status", "show protocols all", "configure timeout 30", "show status", "show protocols all", "configure confirm"]);
    expect(readFileSync(h.configPath, "utf8")).toContain("route 198.51.100.0/24 blackhole;");
    expect(await h.state.readApplied()).toMatchObject({ revision_id: 1, sequence: 1 });
    expect(Buffer.from((await h.state.readLastBundle()) ?? []).equals(Buffer.from(bytes))).toBe(true);
    expect(h.reports).toEqual([{ reason: "applied", error: null }]);
  });

  it("sync - the revision and digest BIRD runs are not fetched again", async () => {
    const h = await harness();
    await publish(h, 1, 1);
    await h.loop.sync({ reason: "start" });
    // A re-issue (new sequence, same content) is nothing to render.
    const reissue = await issueBundle({ ...content, revision_id: 1 }, { sequence: 2, key });
    expect(await h.loop.sync({ reason: "watch", desired: reissue.desired })).toBe("up_to_date");
    expect(h.calls.fetch).toEqual([1]);
  });

  it("trigger - a trigger during an apply queues exactly one more run, never a second beside it", async () => {
    const h = await harness();
    await publish(h, 1, 1);
    let release = () => {};
    h.gate.wait = new Promise<void>((r) => (release = r));
    let inFlight = 0;
    let most = 0;
    const original = h.bird.command.bind(h.bird);
    h.bird.command = async (c, o) => {
      most = Math.max(most, ++inFlight);
      try {
        return await original(c, o);
      } finally {
        inFlight--;
      }
    };
    h.loop.trigger({ reason: "start" });
    await new Promise((r) => setTimeout(r, 20));
    expect(h.calls.fetch).toEqual([1]); // the first run waits inside its fetch
    const v2 = await publish(h, 2, 2);
    for (let i = 0; i < 5; i++) h.loop.trigger({ reason: "poll" });
    h.loop.trigger({ reason: "watch", desired: v2.desired });
    release();
    await h.loop.idle();
    expect(h.calls.fetch).toEqual([1, 2]); // one more run, with the newest trigger
    expect(h.calls.latest).toBe(1);
    expect(most).toBe(1);
    expect(h.bird.commands.filter((c) => c.startsWith("configure timeout"))).toHaveLength(2);
    expect(await h.state.readApplied()).toMatchObject({ revision_id: 2, sequence: 2 });
  });

  it.each([
    ["bad_signature", { tamper: true }],
    ["wrong_speaker", { speakerId: "0192f3a4-0000-7000-8000-0000000000bb" }],
    ["wrong_tenant", { tenantId: "0192f3a4-0000-7000-8000-000000000002" }],
    ["expired", { expiresAt: new Date(Date.now() - 1000), issuedAt: new Date(Date.now() - 60_000) }],
  ] as const)("sync - a bundle refused as %s changes nothing in BIRD and is reported with that code", async (code, extra) => {
    const h = await harness();
    await publish(h, 1, 1);
    await h.loop.sync({ reason: "start" });
    const before = readFileSync(h.configPath);
    const commands = h.bird.commands.length;
    await publish(h, 2, 2, extra);
    expect(await h.loop.sync({ reason: "poll" })).toBe("failed");
    expect(readFileSync(h.configPath).equals(before)).toBe(true);
    expect(h.bird.commands.length).toBe(commands);
    expect(h.reports.at(-1)).toMatchObject({ reason: "apply_failed", error: { code, revision_id: 2 } });
    expect(await h.state.readApplied()).toMatchObject({ revision_id: 1 });
  });

  it("sync - a sequence not above the last applied is refused as stale_sequence and not fetched again until re-issued", async () => {
    const h = await harness();
    await publish(h, 1, 5);
    await h.loop.sync({ reason: "start" });
    await publish(h, 2, 4);
    expect(await h.loop.sync({ reason: "poll" })).toBe("failed");
    expect(h.reports.at(-1)?.error).toMatchObject({ code: "stale_sequence", revision_id: 2, sequence: 4 });
    expect(await h.loop.sync({ reason: "poll" })).toBe("already_refused");
    expect(h.calls.fetch).toEqual([1, 2]);
    await publish(h, 2, 6); // the controller re-issues revision 2
    expect(await h.loop.sync({ reason: "poll" })).toBe("applied");
    expect(await h.state.readApplied()).toMatchObject({ revision_id: 2, sequence: 6 });
  });

  it("sync - a config BIRD refuses is reported with BIRD's file, line and column and leaves the running file as it was", async () => {
    const runner: ProcessRunner = async (_f, args) => ({
      code: 1,
      signal: null,
      stdout: "",
      stderr: `bird: ${String(args[2]).replace("rl-validate.conf", "rl-routes.conf")}:5:3 syntax error, unexpected CF_SYM_UNDEFINED\n`,
    });
    const h = await harness({ runner });
    const before = readFileSync(h.configPath);
    await publish(h, 1, 1);
    expect(await h.loop.sync({ reason: "start" })).toBe("failed");
    const error = h.reports.at(-1)?.error;
    expect(error?.code).toBe("bird_config_invalid");
    expect(error?.message).toMatch(/rl-routes\.conf:5:3 syntax error, unexpected CF_SYM_UNDEFINED\n 5 \| .*\n {3}\| {3}\^$/);
    expect(readFileSync(h.configPath).equals(before)).toBe(true);
    expect(h.bird.commands).toEqual([]);
  });

  it("sync - when BIRD does not answer, the same revision is retried with backoff until it applies", async () => {
    const h = await harness();
    h.bird.answer(/^configure timeout/, new BirdError("bird_unavailable", "control socket closed"));
    await publish(h, 1, 1);
    h.loop.trigger({ reason: "start" });
    const deadline = Date.now() + 3000;
    while (!(await h.state.readApplied()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await h.loop.idle();
    expect(h.reports.map((r) => [r.reason, r.error?.code ?? null])).toEqual([
      ["apply_failed", "bird_unavailable"],
      ["applied", null],
    ]);
    expect(h.calls.fetch).toEqual([1, 1]);
    await h.loop.stop();
  });

  it("sync - a rendered protocol BIRD does not run after configure fails the probation: undo, files back, reported as reverted", async () => {
    const h = await harness();
    const before = readFileSync(h.configPath);
    const original = h.bird.command.bind(h.bird);
    let configured = false;
    h.bird.command = async (c, o) => {
      if (c.startsWith("configure timeout")) configured = true;
      const answer = await original(c, o);
      return configured && c === "show protocols all" ? reply(0, "Name       Proto      Table      State  Since         Info") : answer;
    };
    await publish(h, 1, 1);
    expect(await h.loop.sync({ reason: "start" })).toBe("failed");
    expect(h.bird.commands).toEqual(["show status", "show protocols all", "configure timeout 30", "show status", "show protocols all", "configure undo", "show status"]);
    expect(h.reports.at(-1)?.error).toMatchObject({ code: "reverted", check: "protocols_listed", sessions: ["rl_peer_0192f3a40000700080000000000000e1"] });
    expect(readFileSync(h.configPath).equals(before)).toBe(true);
  });

  it("sync - probation: a controller out of reach at the end of the window is reverted, reported with the check, and the same issue is not tried again", async () => {
    content.bird.confirm_after_seconds = 1;
    let reachable = true;
    const h = await harness({
      probationSampleMs: 200,
      controllerHealth: async () => {
        if (!reachable) throw new ControllerError("controller_unreachable", "connect ECONNREFUSED");
      },
    });
    await publish(h, 1, 1);
    expect(await h.loop.sync({ reason: "start" })).toBe("applied");
    reachable = false;
    const v2 = await publish(h, 2, 2);
    const before = readFileSync(h.configPath);
    const started = Date.now();
    expect(await h.loop.sync({ reason: "watch", desired: v2.desired })).toBe("failed");
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(h.bird.commands.filter((c) => c.startsWith("configure")).slice(-2)).toEqual(["configure timeout 30", "configure undo"]);
    expect(h.reports.at(-1)).toMatchObject({ reason: "apply_failed", error: { code: "reverted", check: "controller_reachable", revision_id: 2, sequence: 2 } });
    expect(h.reports.at(-1)?.error?.message).toMatch(/^probation failed \(controller_reachable\): .*; BIRD runs the previous configuration again \(configure undo\)$/);
    expect(readFileSync(h.configPath).equals(before)).toBe(true);
    expect(await h.state.readApplied()).toMatchObject({ revision_id: 1 });
    const metrics = h.metrics.render();
    expect(metrics).toContain('rl_agent_probation_reverts_total{check="controller_reachable"} 1\n');
    expect(metrics).toContain('rl_agent_probations_total{result="confirmed"} 1\n');
    // The window (1 s) and the controller check's tries (up to 3 s).
    expect(metrics).toMatch(/rl_agent_last_probation_duration_seconds [1-4]\.\d+\n/);
    // The controller is back, and still names the same issue: a reverted bundle waits for another.
    reachable = true;
    expect(await h.loop.sync({ reason: "poll", desired: v2.desired })).toBe("already_refused");
    const v3 = await publish(h, 2, 3);
    expect(await h.loop.sync({ reason: "poll", desired: v3.desired })).toBe("applied");
  });

  it("sync - probation: with probation_check_controller false the unreachable controller does not hold the confirm", async () => {
    content.bird.confirm_after_seconds = 1;
    content.bird.probation_check_controller = false;
    let asked = 0;
    const h = await harness({
      controllerHealth: async () => {
        asked++;
        throw new ControllerError("controller_unreachable", "connect ECONNREFUSED");
      },
    });
    await publish(h, 1, 1);
    expect(await h.loop.sync({ reason: "start" })).toBe("applied");
    expect(asked).toBe(0);
  });

  it("sync - a confirm that comes after BIRD went back puts the confirmed files back and is retried", async () => {
    const h = await harness();
    const before = readFileSync(h.configPath);
    h.bird.answer("configure confirm", reply(19, "Nothing to do"));
    await publish(h, 1, 1);
    expect(await h.loop.sync({ reason: "start" })).toBe("failed");
    expect(h.reports.at(-1)?.error).toMatchObject({ code: "bird_reverted" });
    expect(readFileSync(h.configPath).equals(before)).toBe(true);
    expect(h.bird.commands.at(-1)).toBe("configure undo");
    await new Promise((r) => setTimeout(r, 100)); // the retry (20..50 ms backoff)
    await h.loop.idle();
    expect(await h.state.readApplied()).toMatchObject({ revision_id: 1 });
    await h.loop.stop();
  });

  it("sync - a bundle signed by a new key verifies once the key statement of a pinned key introduces it", async () => {
    const h = await harness();
    const next = await testKey(9);
    h.listedKeys = [
      { ...storedKey(key), created_at: null, statement: null },
      { ...storedKey(next), created_at: null, statement: await signKeyStatement(next, key, new Date()) },
    ];
    await publish(h, 1, 1, { key: next });
    const result = await h.loop.sync({ reason: "start" });
    expect(h.reports.at(-1)?.error).toBeNull();
    expect(result).toBe("applied");
    expect((await h.state.readSigningKeys()).map((k) => k.key_id)).toEqual([key.keyId, next.keyId]);
  });

  it("sync - a key nobody pinned vouches for stays unknown and the bundle is refused", async () => {
    const h = await harness();
    const stranger = await testKey(11);
    h.listedKeys = [{ ...storedKey(stranger), created_at: null, statement: null }];
    await publish(h, 1, 1, { key: stranger });
    expect(await h.loop.sync({ reason: "start" })).toBe("failed");
    expect(h.reports.at(-1)?.error).toMatchObject({ code: "unknown_key" });
    expect(await h.state.readSigningKeys()).toEqual([storedKey(key)]);
  });

  it("restoreConfirmedFiles - puts back the files of the last confirmed bundle after a crash left others on disk", async () => {
    const h = await harness();
    await publish(h, 1, 1);
    await h.loop.sync({ reason: "start" });
    const confirmed = readFileSync(h.configPath, "utf8");
    writeFileSync(h.configPath, "# an unconfirmed config a crash left behind\n");
    const restarted = await harness();
    expect(await restarted.loop.restoreConfirmedFiles()).toBe(true);
    expect(readFileSync(h.configPath, "utf8")).toBe(confirmed);
    expect(await restarted.loop.restoreConfirmedFiles()).toBe(false);
  });

  it("restoreConfirmedFiles - the files it puts back are no more readable than applyBirdConfig's (0640 group bird, or 0600)", async () => {
    const h = await harness();
    await publish(h, 1, 1);
    await h.loop.sync({ reason: "start" });
    writeFileSync(h.configPath, "# an unconfirmed config a crash left behind\n");
    const umask = process.umask(0o022);
    try {
      expect(await (await harness()).loop.restoreConfirmedFiles()).toBe(true);
    } finally {
      process.umask(umask);
    }
    const gid = await groupId("bird");
    expect(statSync(h.configPath).mode & 0o777).toBe(gid === null ? 0o600 : 0o640);
  });

  it("stop - no run starts after stop, and a queued retry is dropped", async () => {
    const h = await harness();
    h.bird.answer(/^configure timeout/, new BirdError("bird_unavailable", "gone"));
    await publish(h, 1, 1);
    await h.loop.sync({ reason: "start" });
    await h.loop.stop();
    h.loop.trigger({ reason: "poll" });
    await new Promise((r) => setTimeout(r, 100));
    expect(h.calls.fetch).toEqual([1]);
  });
});
