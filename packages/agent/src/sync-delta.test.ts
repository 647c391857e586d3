import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { rename, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { StatusErrorJson } from "@rlc/proto";
import { type BundleContent, receiveBundle, type SigningKeyPair } from "@rlc/shared/bundle";
import { createSystemClock } from "@rlc/shared/time";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fakeBird, fixtureContent, okRunner, SPEAKER_ID, storedKey, TENANT_ID, testKey } from "../../../test/helpers/agent-fakes.js";
import { issueBundleV2 } from "../../../test/helpers/bundle-v2.js";
import type { DesiredRevision } from "./bundle/http-client.js";
import { AgentMetrics } from "./http/metrics.js";
import { silentLogger } from "./log.js";
import { StateStore } from "./state.js";
import { SyncLoop } from "./sync-loop.js";

// Delta bundles (rl-bundle/2) through the sync loop: the agent asks for a delta from the revision
// it runs, applies it to the prefixes it kept, and takes the full bundle when the delta does not
// fit; a tampered delta is refused like a tampered full bundle, and BIRD's files stay as they were.

let dir = "";
let key: SigningKeyPair;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "rl-delta-"));
  key = await testKey();
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function content(revision: number, change: (p: BundleContent["prefixes"]) => void = () => undefined): BundleContent {
  const { tenant_id, speaker_id, speaker, bird, communities, peers, prefixes } = fixtureContent();
  const c: BundleContent = { tenant_id, speaker_id, revision_id: revision, speaker, bird: { ...bird, confirm_after_seconds: 0 }, communities, peers, prefixes };
  change(c.prefixes);
  return c;
}

/** The controller's side: for each revision, a full bundle and (maybe) a delta; which one a fetch gets. */
interface Served {
  full: Buffer;
  delta?: Buffer;
  /** true: the delta to the next fetch even when it names no base (a controller that got the base wrong). */
  deltaOnce?: boolean;
}

async function harness() {
  const state = new StateStore(join(dir, "state"));
  await state.init();
  await state.writeSigningKeys([storedKey(key)]);
  mkdirSync(join(dir, "etc"), { recursive: true });
  const configPath = join(dir, "etc", "rl-routes.conf");
  writeFileSync(configPath, "# operator's empty include\n");
  const served = new Map<number, Served>();
  const fetches: { revision: number; base: number | null; got: "full" | "delta" }[] = [];
  const desired = { current: null as DesiredRevision | null };
  const reports: { reason: string; error: StatusErrorJson | null }[] = [];
  let error: StatusErrorJson | null = null;
  const loop = new SyncLoop({
    client: {
      latest: async () => desired.current,
      fetchBundle: async (revision, { baseRevisionId: base = null, onHead } = {}) => {
        const s = served.get(revision)!;
        const delta = s.delta && (base !== null || s.deltaOnce);
        s.deltaOnce = false;
        fetches.push({ revision, base, got: delta ? "delta" : "full" });
        return receiveBundle(delta ? s.delta! : s.full, { maxBytes: Number.MAX_SAFE_INTEGER, onHead });
      },
      signingKeys: async () => [],
    },
    state,
    reporter: {
      setError: (e) => {
        error = e;
      },
      report: async (reason) => {
        reports.push({ reason, error });
        return true;
      },
    },
    bird: fakeBird(configPath),
    runner: okRunner,
    metrics: new AgentMetrics({ version: "test", speakerId: SPEAKER_ID }),
    clock: createSystemClock(),
    log: silentLogger,
    speakerId: SPEAKER_ID,
    tenantId: TENANT_ID,
    birdMode: "include",
    birdConfigPath: configPath,
    stagingDir: join(dir, "staging"),
    healthWaitMs: 0,
    retry: { baseMs: 60_000, maxMs: 60_000 },
  });
  const config = () => readFileSync(configPath, "utf8");
  return { state, served, fetches, desired, reports, loop, config };
}

const base = content(1);
const next = content(2, (p) => {
  p.v4.splice(1, 1);
  p.v4.push(["203.0.113.0/24", ["65000:100"]]);
});

async function applyBase(h: Awaited<ReturnType<typeof harness>>) {
  const first = await issueBundleV2(base, { sequence: 1, key });
  h.served.set(1, { full: first.bytes });
  h.desired.current = first.desired;
  expect(await h.loop.sync({ reason: "start" })).toBe("applied");
}

/** What BIRD's file says after a full apply of `next` on another agent: the reference. */
function fullConfigOfNext(): Promise<string> {
  return fullConfigOf(next);
}

async function fullConfigOf(c: BundleContent): Promise<string> {
  const h = await harness();
  const full = await issueBundleV2(c, { sequence: 1, key });
  h.served.set(c.revision_id, { full: full.bytes });
  h.desired.current = full.desired;
  expect(await h.loop.sync({ reason: "start" })).toBe("applied");
  const text = h.config();
  await rm(h.state.dir, { recursive: true });
  return text;
}

describe("SyncLoop with delta bundles", () => {
  it("a delta from the revision BIRD runs is applied to the kept prefixes: the same config as the full bundle", async () => {
    const reference = await fullConfigOfNext();
    const h = await harness();
    await applyBase(h);
    const full = await issueBundleV2(next, { sequence: 2, key });
    const delta = await issueBundleV2(next, { sequence: 2, key, base });
    h.served.set(2, { full: full.bytes, delta: delta.bytes });
    h.desired.current = delta.desired;
    expect(await h.loop.sync({ reason: "watch" })).toBe("applied");
    expect(h.fetches.at(-1)).toEqual({ revision: 2, base: 1, got: "delta" });
    expect(h.config()).toBe(reference);
    expect(await h.state.readApplied()).toMatchObject({ revision_id: 2, sequence: 2, digest: full.desired.digest });
  });

  it("a delta on a wrong base (its edit script is for other prefixes) is replaced by the full bundle", async () => {
    const reference = await fullConfigOfNext();
    const h = await harness();
    await applyBase(h);
    const other = content(1, (p) => p.v4.shift());
    const full = await issueBundleV2(next, { sequence: 2, key });
    const wrong = await issueBundleV2(next, { sequence: 2, key, base, deltaFrom: other });
    h.served.set(2, { full: full.bytes, delta: wrong.bytes });
    h.desired.current = full.desired;
    const result = await h.loop.sync({ reason: "watch" });
    expect(h.reports.at(-1)?.error ?? null).toBeNull();
    expect(result).toBe("applied");
    expect(h.fetches.slice(-2)).toEqual([
      { revision: 2, base: 1, got: "delta" },
      { revision: 2, base: null, got: "full" },
    ]);
    expect(h.config()).toBe(reference);
  });

  it("a delta applies to the prefixes held in memory, without reading them from disk again", async () => {
    const reference = await fullConfigOfNext();
    const h = await harness();
    await applyBase(h);
    // Away while the delta applies, back before the restart reads it.
    const baseFile = join(h.state.dir, "last-prefixes-base.txt");
    await rename(baseFile, `${baseFile}.away`);
    const full = await issueBundleV2(next, { sequence: 2, key });
    const delta = await issueBundleV2(next, { sequence: 2, key, base });
    h.served.set(2, { full: full.bytes, delta: delta.bytes });
    h.desired.current = delta.desired;
    expect(await h.loop.sync({ reason: "watch" })).toBe("applied");
    expect(h.fetches.at(-1)).toEqual({ revision: 2, base: 1, got: "delta" });
    expect(h.config()).toBe(reference);
    // A section this small is written whole (a log record would outweigh it), else logged on the base.
    if (!existsSync(baseFile)) await rename(`${baseFile}.away`, baseFile);
    // On disk for a restart: the section of the revision now running.
    const section = await new StateStore(h.state.dir).readLastPrefixes();
    expect(Buffer.from(section ?? []).toString()).toContain("203.0.113.0/24\t65000:100");
  });

  it("a delta over a base the agent does not hold is replaced by the full bundle", async () => {
    const reference = await fullConfigOfNext();
    const first = await harness();
    await applyBase(first);
    // The kept prefixes are gone (a state directory restored from an older backup, say), and
    // the agent starts again: it holds them nowhere.
    await rm(join(first.state.dir, "last-prefixes-base.txt"));
    const h = await harness();
    const full = await issueBundleV2(next, { sequence: 2, key });
    const delta = await issueBundleV2(next, { sequence: 2, key, base });
    h.served.set(2, { full: full.bytes, delta: delta.bytes, deltaOnce: true });
    h.desired.current = full.desired;
    expect(await h.loop.sync({ reason: "watch" })).toBe("applied");
    expect(h.fetches.slice(-2)).toEqual([
      { revision: 2, base: null, got: "delta" },
      { revision: 2, base: null, got: "full" },
    ]);
    expect(h.config()).toBe(reference);
  });

  it("a tampered delta is refused as bad_signature and BIRD's config stays byte for byte", async () => {
    const h = await harness();
    await applyBase(h);
    const before = h.config();
    const tampered = await issueBundleV2(next, { sequence: 2, key, base, tamper: true });
    h.served.set(2, { full: tampered.bytes, delta: tampered.bytes });
    h.desired.current = tampered.desired;
    expect(await h.loop.sync({ reason: "watch" })).toBe("failed");
    expect(h.reports.at(-1)).toMatchObject({ reason: "apply_failed", error: { code: "bad_signature", revision_id: 2, sequence: 2 } });
    expect(h.config()).toBe(before);
    expect(await h.state.readApplied()).toMatchObject({ revision_id: 1, sequence: 1 });
  });

  it("after a restart, a delta applies to the prefixes rebuilt from the base and the log of deltas", async () => {
    // Enough prefixes that a delta is logged rather than the whole section written again.
    const many = (revision: number, moved: number) =>
      content(revision, (p) => {
        for (let i = 0; i < 2000; i++) p.v4.push([`10.${i >> 8}.${i & 255}.0/24`, [i < moved ? "65000:200" : "65000:100"]]);
      });
    const [r1, r2, r3] = [many(1, 0), many(2, 10), many(3, 20)];
    const reference = await fullConfigOf(r3);
    const first = await harness();
    first.served.set(1, { full: (await issueBundleV2(r1, { sequence: 1, key })).bytes });
    first.desired.current = (await issueBundleV2(r1, { sequence: 1, key })).desired;
    expect(await first.loop.sync({ reason: "start" })).toBe("applied");
    const two = await issueBundleV2(r2, { sequence: 2, key, base: r1 });
    first.served.set(2, { full: (await issueBundleV2(r2, { sequence: 2, key })).bytes, delta: two.bytes });
    first.desired.current = two.desired;
    expect(await first.loop.sync({ reason: "watch" })).toBe("applied");
    expect(existsSync(join(first.state.dir, "last-prefixes.log"))).toBe(true);

    const h = await harness();
    const three = await issueBundleV2(r3, { sequence: 3, key, base: r2 });
    h.served.set(3, { full: (await issueBundleV2(r3, { sequence: 3, key })).bytes, delta: three.bytes });
    h.desired.current = three.desired;
    expect(await h.loop.sync({ reason: "watch" })).toBe("applied");
    expect(h.fetches).toEqual([{ revision: 3, base: 2, got: "delta" }]);
    expect(h.config()).toBe(reference);
  });

  it("after a refused delta, the next delta still applies to the prefixes BIRD runs", async () => {
    const reference = await fullConfigOfNext();
    const h = await harness();
    await applyBase(h);
    const tampered = await issueBundleV2(next, { sequence: 2, key, base, tamper: true });
    h.served.set(2, { full: tampered.bytes, delta: tampered.bytes });
    h.desired.current = tampered.desired;
    expect(await h.loop.sync({ reason: "watch" })).toBe("failed");
    const again = content(3, (p) => {
      p.v4.splice(1, 1);
      p.v4.push(["203.0.113.0/24", ["65000:100"]]);
    });
    const full = await issueBundleV2(again, { sequence: 3, key });
    const delta = await issueBundleV2(again, { sequence: 3, key, base });
    h.served.set(3, { full: full.bytes, delta: delta.bytes });
    h.desired.current = delta.desired;
    expect(await h.loop.sync({ reason: "watch" })).toBe("applied");
    expect(h.fetches.at(-1)).toEqual({ revision: 3, base: 1, got: "delta" });
    // The same prefixes as revision 2: the same routes; only the header's revision and digest differ.
    const routes = (text: string) => text.split("\n").filter((line) => !/^# (tenant|digest) /.test(line));
    expect(routes(h.config())).toEqual(routes(reference));
  });
});
