import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { diffPrefixLines, encodePrefixLines, sha256Hex } from "@rlc/shared/bundle";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { encodeLogRecord } from "./prefix-log.js";
import { type AppliedPrefixes, type PrefixDelta, StateStore } from "./state.js";

// The prefixes of the revision BIRD runs, on disk: a base section and a log of the deltas applied
// since. A restart must read back exactly the section applied.json names, or nothing (then the
// agent fetches the full bundle), whatever a crash left; and a delta's apply writes the delta.

const BASE = "last-prefixes-base.txt";
const LOG = "last-prefixes.log";
const APPLIED = "applied.json";

let dir = "";
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "rl-state-prefixes-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A revision's prefixes: prefix number → community; its lines in the section's order. */
type Prefixes = Map<number, number>;
const linesOf = (p: Prefixes) => [...p.entries()].sort((a, b) => a[0] - b[0]).map(([n, c]) => `10.${n >> 8}.${n & 255}.0/24\t65000:${c}`);
const sectionOf = (p: Prefixes) => encodePrefixLines(linesOf(p));
const many = (n: number, community = 1): Prefixes => new Map(Array.from({ length: n }, (_, i) => [i, community]));
const changed = (p: Prefixes, edits: [number, number][]): Prefixes => {
  const next = new Map(p);
  for (const [n, c] of edits) c === 0 ? next.delete(n) : next.set(n, c);
  return next;
};

/** What the sync loop hands the store: the full section, and the delta when one gave it. */
function full(p: Prefixes): AppliedPrefixes {
  return { section: sectionOf(p) };
}
function delta(from: Prefixes, to: Prefixes): AppliedPrefixes {
  const section = sectionOf(to);
  return { section, delta: { bytes: diffPrefixLines(linesOf(from), linesOf(to)), baseSha256: sha256Hex(sectionOf(from)), sha256: sha256Hex(section) } };
}
const record = (revision: number) => ({ revision_id: revision, sequence: revision, digest: `sha256:${revision}`, applied_at: "2026-11-22T10:00:00.000Z" });
/** The log record of the delta from `from` to `to`, as the store writes it. */
function logRecord(revision: number, from: Prefixes, to: Prefixes): Buffer {
  const { bytes, baseSha256, sha256 } = delta(from, to).delta as PrefixDelta;
  return encodeLogRecord({ revision_id: revision, baseSha256, sha256, delta: bytes });
}
const apply = (state: StateStore, revision: number, prefixes: AppliedPrefixes) =>
  state.recordApplied(Buffer.from(`bundle ${revision}`), record(revision), prefixes);

/** A restart: a new store on the same directory reads the section. */
async function restart(): Promise<{ state: StateStore; section: string | null }> {
  const state = new StateStore(dir);
  const section = await state.readLastPrefixes();
  return { state, section: section && Buffer.from(section).toString("utf8") };
}
const text = (p: Prefixes) => sectionOf(p).toString("utf8");
const size = (name: string) => (existsSync(join(dir, name)) ? statSync(join(dir, name)).size : null);

describe("StateStore prefixes: a base and a log of deltas", () => {
  it("appends only a delta's bytes, and a restart rebuilds the section from base and log", async () => {
    const state = new StateStore(dir);
    const r1 = many(2000);
    const r2 = changed(r1, [
      [5, 2],
      [700, 0],
      [2500, 3],
    ]);
    const r3 = changed(r2, [
      [6, 2],
      [1999, 0],
    ]);
    await apply(state, 1, full(r1));
    const baseSize = size(BASE) as number;
    await apply(state, 2, delta(r1, r2));
    await apply(state, 3, delta(r2, r3));
    // The base as the full bundle wrote it; the log two small records.
    expect(readFileSync(join(dir, BASE), "utf8")).toBe(text(r1));
    expect(size(LOG)).toBeLessThan(600);
    expect(baseSize).toBeGreaterThan(40_000);
    expect(JSON.parse(readFileSync(join(dir, APPLIED), "utf8")).prefixes_sha256).toBe(sha256Hex(sectionOf(r3)));
    const { state: again, section } = await restart();
    expect(section).toBe(text(r3));
    // And it goes on from there after the restart.
    const r4 = changed(r3, [[7, 4]]);
    await apply(again, 4, delta(r3, r4));
    expect((await restart()).section).toBe(text(r4));
    for (const f of readdirSync(dir)) expect(statSync(join(dir, f)).mode & 0o777).toBe(0o600);
  });

  it("ignores a record cut short by a crash, and writes the next one in its place", async () => {
    const state = new StateStore(dir);
    const r1 = many(2000);
    const r2 = changed(r1, [[5, 2]]);
    const r3 = changed(r2, [[6, 2]]);
    await apply(state, 1, full(r1));
    await apply(state, 2, delta(r1, r2));
    const good = size(LOG) as number;
    const applied = readFileSync(join(dir, APPLIED));
    await apply(state, 3, delta(r2, r3));
    const log = readFileSync(join(dir, LOG));
    // The crash: the append half done, applied.json not written.
    truncateSync(join(dir, LOG), good + 40);
    writeFileSync(join(dir, APPLIED), applied);
    const { state: again, section } = await restart();
    expect(section).toBe(text(r2));
    const r3b = changed(r2, [[9, 0]]);
    await apply(again, 3, delta(r2, r3b));
    expect(readFileSync(join(dir, LOG))).toEqual(Buffer.concat([log.subarray(0, good), logRecord(3, r2, r3b)]));
    expect((await restart()).section).toBe(text(r3b));
  });

  it("a whole record past the one applied.json names is not read, and the next append drops it", async () => {
    const state = new StateStore(dir);
    const r1 = many(2000);
    const r2 = changed(r1, [[5, 2]]);
    const r3 = changed(r2, [[6, 2]]);
    await apply(state, 1, full(r1));
    await apply(state, 2, delta(r1, r2));
    const applied = readFileSync(join(dir, APPLIED));
    const good = size(LOG) as number;
    await apply(state, 3, delta(r2, r3));
    writeFileSync(join(dir, APPLIED), applied); // the crash came after the append
    const log = readFileSync(join(dir, LOG));
    expect(log.length).toBeGreaterThan(good);
    const { state: again, section } = await restart();
    expect(section).toBe(text(r2));
    const r4 = changed(r2, [[1, 0]]);
    await apply(again, 4, delta(r2, r4));
    expect(readFileSync(join(dir, LOG))).toEqual(Buffer.concat([log.subarray(0, good), logRecord(4, r2, r4)]));
    expect((await restart()).section).toBe(text(r4));
  });

  it("folds the log into a new base once it passes a quarter of the base, or 16 records", async () => {
    let state = new StateStore(dir);
    let p = many(2000);
    await apply(state, 1, full(p));
    const baseSize = size(BASE) as number;
    // Deltas of 40 changed lines (~1 KB each): a base's quarter is ~12 of them.
    let revision = 1;
    let folded = 0;
    while (!folded) {
      const next = changed(
        p,
        Array.from({ length: 40 }, (_, k): [number, number] => [(revision * 40 + k) % 2000, 2 + (revision % 3)]),
      );
      const before = size(LOG) ?? 0;
      await apply(state, ++revision, delta(p, next));
      p = next;
      if (size(LOG) === null) folded = revision;
      else expect((size(LOG) as number) * 4).toBeLessThanOrEqual(baseSize + (size(LOG) as number) - before);
    }
    expect(folded).toBeGreaterThan(5);
    expect(readFileSync(join(dir, BASE), "utf8")).toBe(text(p));
    expect((await restart()).section).toBe(text(p));

    // One changed line each: the count folds it.
    state = (await restart()).state;
    for (let k = 1; k <= 17; k++) {
      const next = changed(p, [[k, 9]]);
      await apply(state, ++revision, delta(p, next));
      p = next;
      if (k <= 16) expect(size(LOG), `record ${k}`).not.toBeNull();
    }
    expect(size(LOG)).toBeNull();
    expect(readFileSync(join(dir, BASE), "utf8")).toBe(text(p));
  });

  it("gives nothing when base and log do not chain, or a record before the one named is damaged", async () => {
    const state = new StateStore(dir);
    const r1 = many(2000);
    const r2 = changed(r1, [[5, 2]]);
    const r3 = changed(r2, [[6, 2]]);
    await apply(state, 1, full(r1));
    await apply(state, 2, delta(r1, r2));
    await apply(state, 3, delta(r2, r3));
    const base = readFileSync(join(dir, BASE));
    const log = readFileSync(join(dir, LOG));

    // Another base under the log (the records apply to another section).
    writeFileSync(join(dir, BASE), sectionOf(changed(r1, [[3, 3]])));
    expect((await restart()).section).toBeNull();
    writeFileSync(join(dir, BASE), base);
    expect((await restart()).section).toBe(text(r3));

    // One byte of the first record changed: it and all after it are no records.
    const damaged = Buffer.from(log);
    damaged[100] = (damaged[100] as number) ^ 1;
    writeFileSync(join(dir, LOG), damaged);
    expect((await restart()).section).toBeNull();

    // The log gone: the base is not the section applied.json names.
    unlinkSync(join(dir, LOG));
    expect((await restart()).section).toBeNull();
  });

  it("a delta the store cannot place after the section on disk is written whole", async () => {
    await apply(new StateStore(dir), 1, full(many(2000)));
    const r2 = changed(many(2000), [[5, 2]]);
    // A new store that has not read the section: it does not know where the log stands.
    await apply(new StateStore(dir), 2, delta(many(2000), r2));
    expect(size(LOG)).toBeNull();
    expect(readFileSync(join(dir, BASE), "utf8")).toBe(text(r2));
  });

  it("reads the last-prefixes.txt of an agent before the log, and moves off it at the next apply", async () => {
    const r1 = many(300);
    writeFileSync(join(dir, "last-prefixes.txt"), sectionOf(r1), { mode: 0o600 });
    writeFileSync(join(dir, APPLIED), JSON.stringify(record(1)), { mode: 0o600 });
    const { state, section } = await restart();
    expect(section).toBe(text(r1));
    const r2 = changed(r1, [[5, 2]]);
    await apply(state, 2, delta(r1, r2));
    // Gone: an agent before the log, started here again, must find no section rather than an
    // old one (it puts BIRD's files back from it at its start); it fetches the full bundle.
    expect(existsSync(join(dir, "last-prefixes.txt"))).toBe(false);
    expect((await restart()).section).toBe(text(r2));
  });
});

// Random runs of applies, full and delta, some cut by a crash at a random point, against the
// model: a restart reads the section the last applied.json names, or (after a crash while a
// whole section was being written) nothing.

const FILES = [BASE, LOG, "last-bundle.json"] as const;
type Snapshot = Map<string, Buffer | null>;
const snapshot = (): Snapshot => new Map(FILES.map((f) => [f, existsSync(join(dir, f)) ? readFileSync(join(dir, f)) : null]));

/**
 * What a crash before applied.json leaves: each file old or new (written side by side, in no
 * order a crash respects), the log also cut anywhere after the part old and new share (a torn
 * append), or cut there (truncated, nothing written yet); applied.json old.
 */
function crash(before: Snapshot, after: Snapshot, applied: Buffer | null, pick: (n: number) => number): void {
  for (const f of FILES) {
    const old = before.get(f) ?? null;
    const now = after.get(f) ?? null;
    let bytes = pick(2) === 0 ? old : now;
    if (f === LOG && old && now && pick(2) === 0) {
      let same = 0;
      while (same < old.length && same < now.length && old[same] === now[same]) same++;
      bytes = now.subarray(0, same + pick(now.length - same + 1));
    }
    if (bytes) writeFileSync(join(dir, f), bytes);
    else if (existsSync(join(dir, f))) unlinkSync(join(dir, f));
  }
  if (applied) writeFileSync(join(dir, APPLIED), applied);
  else unlinkSync(join(dir, APPLIED));
}

const step = fc.record({
  edits: fc.array(fc.tuple(fc.nat(299), fc.nat(3)), { minLength: 1, maxLength: 12 }),
  full: fc.boolean(),
  restart: fc.boolean(),
  crash: fc.option(fc.array(fc.nat(1_000_000), { minLength: 12, maxLength: 12 }), { freq: 3 }),
});

describe("StateStore prefixes: crashes at random points", () => {
  it("a restart reads the section applied.json names, or nothing only after a crash amid a whole write", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 24 }), async (steps) => {
        rmSync(dir, { recursive: true, force: true });
        let state = new StateStore(dir);
        await state.init();
        let applied: Prefixes | null = null; // the model: what applied.json names
        let held: Prefixes | null = null; // what the agent holds (what its next delta applies to)
        let revision = 0;
        for (const s of steps) {
          const base = applied ?? many(150);
          const next = changed(base, s.edits);
          const prefixes = s.full || !held ? full(next) : delta(held, next);
          revision++;
          if (!s.crash) {
            await apply(state, revision, prefixes);
            applied = held = next;
          } else {
            const before = snapshot();
            const appliedBytes = existsSync(join(dir, APPLIED)) ? readFileSync(join(dir, APPLIED)) : null;
            await apply(state, revision, prefixes);
            const after = snapshot();
            const picks = [...s.crash];
            crash(before, after, appliedBytes, (n) => (picks.shift() ?? 0) % n);
            const whole = !before.get(BASE)?.equals(after.get(BASE) as Buffer);
            const read = await restart();
            state = read.state;
            if (read.section !== null || !whole) expect(read.section).toBe(applied && text(applied));
            held = read.section === null ? null : applied;
            continue;
          }
          if (s.restart) {
            const read = await restart();
            state = read.state;
            expect(read.section).toBe(text(applied));
          }
        }
      }),
      { numRuns: 60 },
    );
  }, 120_000);
});
