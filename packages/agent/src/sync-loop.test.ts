import { readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { BirdError, groupId, type ProcessRunner } from "@rlc/shared/bird";
import { signKeyStatement } from "@rlc/shared/bundle";
import { describe, expect, it } from "vitest";
import { issueBundle, okRunner, reply, storedKey, testKey } from "../../../test/helpers/agent-fakes.js";
import { configFiles, env, harness, publish, useSyncEnv } from "../../../test/helpers/sync-loop-harness.js";
import { ControllerError } from "./bundle/http-client.js";
import { createLogger } from "./log.js";

useSyncEnv();

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
    expect(Object.values(configFiles(h)).join("")).toContain("route 198.51.100.0/24 blackhole;");
    expect(await h.state.readApplied()).toMatchObject({ revision_id: 1, sequence: 1 });
    expect(Buffer.from((await h.state.readLastBundle()) ?? []).equals(Buffer.from(bytes))).toBe(true);
    expect(h.reports).toEqual([{ reason: "applied", error: null }]);
  });

  it("sync - the revision and digest BIRD runs are not fetched again", async () => {
    const h = await harness();
    await publish(h, 1, 1);
    await h.loop.sync({ reason: "start" });
    // A re-issue (new sequence, same content) is nothing to render.
    const reissue = await issueBundle({ ...env.content, revision_id: 1 }, { sequence: 2, key: env.key });
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
    // Until the first run is inside its fetch (a fixed pause was too short on a busy machine).
    for (const deadline = Date.now() + 5000; h.calls.fetch.length === 0 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 5));
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
    const before = configFiles(h);
    const commands = h.bird.commands.length;
    await publish(h, 2, 2, extra);
    expect(await h.loop.sync({ reason: "poll" })).toBe("failed");
    expect(configFiles(h)).toEqual(before);
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
    const before = configFiles(h);
    await publish(h, 1, 1);
    expect(await h.loop.sync({ reason: "start" })).toBe("failed");
    const error = h.reports.at(-1)?.error;
    expect(error?.code).toBe("bird_config_invalid");
    expect(error?.message).toMatch(/rl-routes\.conf:5:3 syntax error, unexpected CF_SYM_UNDEFINED\n 5 \| .*\n {3}\| {3}\^$/);
    expect(configFiles(h)).toEqual(before);
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

  it("sync - a controller too busy to send the bundle (controller_busy) is asked again later and no failure is reported", async () => {
    const h = await harness();
    await publish(h, 1, 1);
    const busy = Promise.reject(new ControllerError("controller_busy", "GET /v1/speakers/s/bundle/1: 429 rate_limited"));
    busy.catch(() => undefined);
    h.gate.wait = busy;
    h.loop.trigger({ reason: "start" });
    const deadline = Date.now() + 3000;
    while (h.calls.fetch.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 1));
    h.gate.wait = null;
    while (!(await h.state.readApplied()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    await h.loop.idle();
    expect(h.calls.fetch).toEqual([1, 1]);
    expect(h.reports.map((r) => [r.reason, r.error?.code ?? null])).toEqual([["applied", null]]);
    await h.loop.stop();
  });

  it("sync - a rendered protocol BIRD does not run after configure fails the probation: undo, files back, reported as reverted", async () => {
    const h = await harness();
    const before = configFiles(h);
    const original = h.bird.command.bind(h.bird);
    let configured = false;
    h.bird.command = async (c, o) => {
      if (c.startsWith("configure timeout")) configured = true;
      const answer = await original(c, o);
      return configured && c === "show protocols all" ? reply(0, "Name       Proto      Table      State  Since         Info") : answer;
    };
    await publish(h, 1, 1);
    expect(await h.loop.sync({ reason: "start" })).toBe("failed");
    expect(h.bird.commands).toEqual([
      "show status",
      "show protocols all",
      "configure timeout 30",
      "show status",
      "show protocols all",
      "configure undo",
      "show status",
    ]);
    expect(h.reports.at(-1)?.error).toMatchObject({ code: "reverted", check: "protocols_listed", sessions: ["rl_peer_0192f3a40000700080000000000000e1"] });
    expect(configFiles(h)).toEqual(before);
  });

  it("sync - probation: a controller out of reach at the end of the window is reverted, reported with the check, and the same issue is not tried again", async () => {
    env.content.bird.confirm_after_seconds = 1;
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
    const before = configFiles(h);
    const started = Date.now();
    expect(await h.loop.sync({ reason: "watch", desired: v2.desired })).toBe("failed");
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(h.bird.commands.filter((c) => c.startsWith("configure")).slice(-2)).toEqual(["configure timeout 30", "configure undo"]);
    expect(h.reports.at(-1)).toMatchObject({ reason: "apply_failed", error: { code: "reverted", check: "controller_reachable", revision_id: 2, sequence: 2 } });
    expect(h.reports.at(-1)?.error?.message).toMatch(
      /^probation failed \(controller_reachable\): .*; BIRD runs the previous configuration again \(configure undo\)$/,
    );
    expect(configFiles(h)).toEqual(before);
    expect(await h.state.readApplied()).toMatchObject({ revision_id: 1 });
    const metrics = h.metrics.render();
    expect(metrics).toContain('rl_agent_probation_reverts_total{check="controller_reachable"} 1\n');
    expect(metrics).toContain('rl_agent_probations_total{result="confirmed"} 1\n');
    // The window (1 s) and the controller check's tries (up to 3 s).
    expect(metrics).toMatch(/rl_agent_last_probation_duration_seconds [1-9]\d*(\.\d+)?\n/); // at least the window; a loaded machine adds to it
    // The controller is back, and still names the same issue: a reverted bundle waits for another.
    reachable = true;
    expect(await h.loop.sync({ reason: "poll", desired: v2.desired })).toBe("already_refused");
    const v3 = await publish(h, 2, 3);
    expect(await h.loop.sync({ reason: "poll", desired: v3.desired })).toBe("applied");
  });

  it("sync - probation: with probation_check_controller false the unreachable controller does not hold the confirm", async () => {
    env.content.bird.confirm_after_seconds = 1;
    env.content.bird.probation_check_controller = false;
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
    const before = configFiles(h);
    h.bird.answer("configure confirm", reply(19, "Nothing to do"));
    await publish(h, 1, 1);
    expect(await h.loop.sync({ reason: "start" })).toBe("failed");
    expect(h.reports.at(-1)?.error).toMatchObject({ code: "bird_reverted" });
    expect(configFiles(h)).toEqual(before);
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
      { ...storedKey(env.key), created_at: null, statement: null },
      { ...storedKey(next), created_at: null, statement: await signKeyStatement(next, env.key, new Date()) },
    ];
    await publish(h, 1, 1, { key: next });
    const result = await h.loop.sync({ reason: "start" });
    expect(h.reports.at(-1)?.error).toBeNull();
    expect(result).toBe("applied");
    expect((await h.state.readSigningKeys()).map((k) => k.key_id)).toEqual([env.key.keyId, next.keyId]);
  });

  it("sync - a key nobody pinned vouches for stays unknown and the bundle is refused", async () => {
    const h = await harness();
    const stranger = await testKey(11);
    h.listedKeys = [{ ...storedKey(stranger), created_at: null, statement: null }];
    await publish(h, 1, 1, { key: stranger });
    expect(await h.loop.sync({ reason: "start" })).toBe("failed");
    expect(h.reports.at(-1)?.error).toMatchObject({ code: "unknown_key" });
    expect(await h.state.readSigningKeys()).toEqual([storedKey(env.key)]);
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

  it("restoreConfirmedFiles - files an agent before the render by BIRD version left are rewritten for this BIRD once, logged as that; a tampered one is still a restore", async () => {
    env.content.peers[0]!.password = "md5-s3cret";
    // The agent before: it rendered what every BIRD accepts, without `authentication md5;`.
    const before = await harness();
    await publish(before, 1, 1);
    await before.loop.sync({ reason: "start" });
    const left = readFileSync(before.configPath, "utf8");
    expect(left).toContain('password "md5-s3cret";');
    expect(left).not.toContain("authentication md5;");

    const lines: string[] = [];
    const upgraded = await harness({ birdVersion: async () => "3.1.8", log: createLogger("info", (l) => lines.push(l)) });
    writeFileSync(upgraded.configPath, left); // the harness wrote the operator's empty include over it
    const logged = () => lines.splice(0).map((l) => JSON.parse(l) as { level: number; msg: string; bird_version?: string });
    expect(await upgraded.loop.restoreConfirmedFiles()).toBe(true);
    expect(readFileSync(upgraded.configPath, "utf8")).toContain("authentication md5;");
    expect(logged()).toEqual([
      expect.objectContaining({
        level: 30,
        msg: "rewrote the files of the last confirmed revision for this BIRD's version (once, after an upgrade)",
        bird_version: "3.1.8",
      }),
    ]);
    expect(await upgraded.loop.restoreConfirmedFiles()).toBe(false);
    expect(logged()).toEqual([]);

    writeFileSync(upgraded.configPath, left.replace("md5-s3cret", "tampered"));
    expect(await upgraded.loop.restoreConfirmedFiles()).toBe(true);
    expect(readFileSync(upgraded.configPath, "utf8")).toContain('password "md5-s3cret";\n  authentication md5;');
    expect(logged()).toEqual([expect.objectContaining({ level: 40, msg: "restored the files of the last confirmed revision" })]);
    rmSync(upgraded.configPath);
    expect(await upgraded.loop.restoreConfirmedFiles()).toBe(true);
    expect(logged()).toEqual([expect.objectContaining({ level: 40, msg: "restored the files of the last confirmed revision" })]);
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

  it("sync - a static file edited by hand after an apply is written back by the next one (the loop knows what it wrote, and sees the edit)", async () => {
    const h = await harness();
    await publish(h, 1, 1);
    expect(await h.loop.sync({ reason: "start" })).toBe("applied");
    const rendered = configFiles(h);
    const statics = Object.keys(rendered).filter((f) => f.includes(".rl_static"));
    expect(statics.length).toBeGreaterThan(0);
    const edited = join(dirname(h.configPath), statics[0] as string);
    writeFileSync(edited, (rendered[statics[0] as string] as string).replace("blackhole;", "unreachable;"));
    // Revision 2 renders the same routes (its include differs): the edited file is read, found
    // to differ from its text, and replaced with the rest.
    await publish(h, 2, 2);
    expect(await h.loop.sync({ reason: "poll" })).toBe("applied");
    expect(readFileSync(edited, "utf8")).toBe(rendered[statics[0] as string]);
  });

  it("sync - content BIRD already runs byte for byte is recorded without configure (a crash before the record)", async () => {
    const h = await harness();
    const { bytes, desired } = await publish(h, 1, 1);
    expect(await h.loop.sync({ reason: "start" })).toBe("applied");
    // The process died after BIRD confirmed and before applied.json was written: a new one
    // starts on the same state directory, beside the files BIRD runs.
    const running = configFiles(h);
    rmSync(join(h.state.dir, "applied.json"));
    const restarted = await harness();
    for (const [name, text] of Object.entries(running)) writeFileSync(join(dirname(restarted.configPath), name), text);
    restarted.bundles.set(1, bytes);
    expect(await restarted.loop.sync({ reason: "start", desired })).toBe("applied");
    expect(restarted.bird.commands.filter((c) => c.startsWith("configure"))).toEqual([]);
    expect(await restarted.state.readApplied()).toMatchObject({ revision_id: 1, sequence: 1 });
  });

  it("sync - a bundle refused before a restart is not fetched again after it", async () => {
    const refusing: ProcessRunner = async () => ({ code: 1, signal: null, stdout: "", stderr: "bird: /x/rl-routes.conf:3:7 syntax error\n" });
    const first = await harness({ runner: refusing });
    const { bytes, desired } = await publish(first, 1, 1);
    expect(await first.loop.sync({ reason: "start" })).toBe("failed");
    // A new process on the same state directory, the controller still naming the same issue.
    const second = await harness();
    second.bundles.set(1, bytes);
    expect(await second.loop.sync({ reason: "start", desired })).toBe("already_refused");
    expect(second.calls.fetch).toEqual([]);
    // A different issue of it is fetched and applied.
    const reissue = await publish(second, 1, 2);
    expect(await second.loop.sync({ reason: "poll", desired: reissue.desired })).toBe("applied");
    expect(await second.state.readRefused()).toBeNull();
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
