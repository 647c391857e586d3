import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { BundlePayload } from "../bundle/index.js";
import type { Clock } from "../time.js";
import type { BirdControl, BirdReply } from "./birdc.js";
import { configureTimeoutSeconds, loadBirdConfig } from "./sequence.js";
import type { ProcessRunner } from "./validate.js";

// The sequence the agent and the local speaker share, on real files with a recording BIRD.

const reply = (code: number, text = ""): BirdReply => ({ code, text, lines: [{ code, text }] });
const clock: Clock = { now: () => 0, sleep: async () => undefined };

function recordingBird(protocols: () => string[]): BirdControl & { commands: string[] } {
  const commands: string[] = [];
  return {
    commands,
    close: () => undefined,
    command: async (c) => {
      commands.push(c);
      if (c === "show protocols all")
        return reply(
          0,
          protocols()
            .map((p) => `${p}  BGP  ---  up  12:00:00  Established`)
            .join("\n"),
        );
      return reply(c === "show status" ? 13 : c === "configure confirm" ? 18 : 3);
    },
  };
}

function payload(v4: [string, string[]][], revision = 1): BundlePayload {
  return {
    tenant_id: "0192f3a4-0000-7000-8000-000000000001",
    speaker_id: "0192f3a4-0000-7000-8000-0000000000aa",
    revision_id: revision,
    sequence: revision,
    issued_at: "2026-11-24T00:00:00Z",
    expires_at: "2026-11-25T00:00:00Z",
    digest: `sha256:${String(revision).padStart(64, "0")}`,
    speaker: { router_id: "192.0.2.1", asn: 65000, policies_json: {} },
    bird: {},
    communities: [],
    peers: [],
    prefixes: { v4, v6: [] },
  } as unknown as BundlePayload;
}

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function setup() {
  const root = mkdtempSync(join(tmpdir(), "rl-sequence-"));
  dirs.push(root);
  const configDir = join(root, "etc");
  mkdirSync(configDir);
  const validated: string[] = [];
  const runner: ProcessRunner = async (_f, args) => {
    validated.push(args[2] as string);
    return { code: 0, signal: null, stdout: "", stderr: "" };
  };
  const bird = recordingBird(() => []);
  const o = { mode: "include" as const, configPath: join(configDir, "rl-routes.conf"), stagingDir: join(root, "staging") };
  return { configDir, validated, runner, bird, o };
}

const A: [string, string[]][] = [
  ["192.0.2.0/24", ["65000:1"]],
  ["198.51.100.0/24", ["65000:2"]],
];

describe("loadBirdConfig", () => {
  it("writes one file per community set and leaves the sets that did not change untouched", async () => {
    const s = setup();
    const deps = { birdc: s.bird, runner: s.runner, clock };
    await loadBirdConfig(deps, { ...s.o, payload: payload(A) });
    const files = readdirSync(s.configDir)
      .filter((f) => !f.endsWith(".rl-prev"))
      .sort();
    expect(files).toHaveLength(3);
    const statics = files.filter((f) => f.startsWith("rl-routes.rl_static4_"));
    const before = Object.fromEntries(statics.map((f) => [f, statSync(join(s.configDir, f)).ino]));
    const kept = statics.find((f) => readFileSync(join(s.configDir, f), "utf8").includes("192.0.2.0/24")) as string;

    // Revision 2 changes only the 65000:2 set.
    const next: [string, string[]][] = [A[0] as [string, string[]], ["203.0.113.0/24", ["65000:2"]]];
    const loaded = await loadBirdConfig(deps, { ...s.o, payload: payload(next, 2) });
    expect(loaded.configured).toBe(true);
    expect(statSync(join(s.configDir, kept)).ino).toBe(before[kept]);
    expect(readFileSync(join(s.configDir, "rl-routes.conf"), "utf8")).toContain(`include "${kept}";`);
    const all = readdirSync(s.configDir)
      .filter((f) => f.startsWith("rl-routes"))
      .map((f) => readFileSync(join(s.configDir, f), "utf8"))
      .join("");
    expect(all).toContain("route 203.0.113.0/24 blackhole;");
    expect(all).not.toContain("198.51.100.0/24");
  });

  it("removes the static files of a community set the confirmed config no longer has", async () => {
    const s = setup();
    const deps = { birdc: s.bird, runner: s.runner, clock };
    await loadBirdConfig(deps, { ...s.o, payload: payload(A) });
    await loadBirdConfig(deps, { ...s.o, payload: payload([A[0] as [string, string[]]], 2) });
    const statics = readdirSync(s.configDir).filter((f) => f.startsWith("rl-routes.rl_static"));
    expect(statics).toHaveLength(1);
  });

  it("skips bird -p and configure when BIRD already runs exactly these bytes", async () => {
    const s = setup();
    const deps = { birdc: s.bird, runner: s.runner, clock };
    await loadBirdConfig(deps, { ...s.o, payload: payload(A) });
    s.bird.commands.length = 0;
    s.validated.length = 0;
    const loaded = await loadBirdConfig(deps, { ...s.o, payload: payload(A) });
    // The local speaker's watch is its health check (`show protocols all`).
    const probations = s.bird.commands.filter((c) => c === "show protocols all").length;
    expect(loaded.configured).toBe(false);
    expect(probations).toBe(0);
    expect(s.validated).toEqual([]);
    expect(s.bird.commands).toEqual([]);
  });

  it("undoes and throws health_check_failed when BIRD does not list a rendered BGP protocol", async () => {
    const s = setup();
    const deps = { birdc: s.bird, runner: s.runner, clock };
    const p = payload(A);
    (p as { peers: unknown[] }).peers = [
      { id: "0192f3a4-0000-7000-8000-0000000000e1", name: "gobgp", neighbor_address: "127.0.0.2", remote_asn: 65001, address_families: ["ipv4"] },
    ];
    writeFileSync(s.o.configPath, "# before\n");
    await expect(loadBirdConfig(deps, { ...s.o, payload: p })).rejects.toMatchObject({ code: "health_check_failed" });
    expect(s.bird.commands.at(-1)).toBe("configure undo");
    expect(readFileSync(s.o.configPath, "utf8")).toBe("# before\n");
  });

  it("configureTimeoutSeconds - the bundle's value held to 2 s … 1 h, 30 s when it names none", () => {
    const t = (v: unknown) => configureTimeoutSeconds({ bird: { configure_timeout_seconds: v } } as unknown as BundlePayload);
    expect([t(undefined), t(1), t(45.7), t(99_999), t("x")]).toEqual([30, 2, 45, 3600, 30]);
  });
});
