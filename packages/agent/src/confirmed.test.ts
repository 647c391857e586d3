import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chunkedBytes, diffPrefixLines, encodePrefixSection, SectionTags, sha256Hex, splitSection } from "@rlc/shared/bundle";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { applyKeptDelta, keepSection } from "./bundle/kept-prefixes.js";
import type { VerifiedKept } from "./bundle/verify-kept.js";
import { ConfirmedRevision } from "./confirmed.js";
import { StateStore } from "./state.js";

// The section BIRD runs stays as it is while a delta's is made (in memory of its own) and until
// that one is confirmed; then only the new one is held.

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "rl-confirmed-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const section = (n: number, shift: number) =>
  encodePrefixSection({
    v4: Array.from({ length: n }, (_, i) => [`10.${(i + shift) >> 8}.${(i + shift) & 255}.0/24`, ["65000:1"]] as [string, string[]]),
    v6: [],
  });

describe("ConfirmedRevision across deltas", () => {
  it("holds the section confirmed last; a delta's section never writes over the one BIRD runs", async () => {
    const state = new StateStore(join(dir, "state"));
    await state.init();
    const tags = new SectionTags();
    const confirmed = new ConfirmedRevision(state, tags);
    const appliedOf = (revision: number) => ({ revision_id: revision, sequence: revision, digest: "sha256:00", applied_at: new Date().toISOString() });
    const record = (revision: number, verified: Partial<VerifiedKept>) =>
      confirmed.record(Buffer.from("bundle"), appliedOf(revision), verified as VerifiedKept);

    const a = section(300, 0);
    await record(1, { prefixSection: a, kept: keepSection(1, a, tags), delta: null, payload: { revision_id: 1 } as VerifiedKept["payload"] });
    let bytes = a;
    for (let revision = 2; revision <= 5; revision++) {
      const kept = await confirmed.prefixes(appliedOf(revision - 1));
      if (!kept) throw new Error("not kept");
      const running = chunkedBytes(kept.section);
      const next = section(300, revision * 7);
      const rebuilt = applyKeptDelta(kept, diffPrefixLines(splitSection(bytes), splitSection(next)), { revisionId: revision, sha256: sha256Hex(next) });
      expect(chunkedBytes(rebuilt.kept.section).equals(next)).toBe(true);
      // BIRD runs the base until the new one is confirmed: its bytes are as they were (the chunks both share are never written).
      expect(chunkedBytes(kept.section).equals(running)).toBe(true);
      expect((await confirmed.prefixes(appliedOf(revision - 1)))?.section).toBe(kept.section);
      await record(revision, {
        prefixSection: chunkedBytes(rebuilt.kept.section),
        kept: rebuilt.kept,
        delta: rebuilt.delta,
        payload: { revision_id: revision } as VerifiedKept["payload"],
      });
      expect((await confirmed.prefixes(appliedOf(revision)))?.section).toBe(rebuilt.kept.section);
      bytes = next;
    }
  });
});

describe("ConfirmedRevision after a start", () => {
  it("reads the prefixes on disk once for both the columns and the payload (the log is replayed once)", async () => {
    const state = new StateStore(join(dir, "state"));
    await state.init();
    const a = section(50, 0);
    await state.recordApplied(
      Buffer.from("not a bundle"),
      { revision_id: 1, sequence: 1, digest: "sha256:00", applied_at: new Date().toISOString() },
      { section: a },
    );
    let reads = 0;
    const read = state.readLastPrefixes.bind(state);
    state.readLastPrefixes = () => {
      reads++;
      return read();
    };
    const confirmed = new ConfirmedRevision(state, new SectionTags());
    const applied = await state.readApplied();
    const held = await confirmed.prefixes(applied);
    expect(held && chunkedBytes(held.section).equals(a)).toBe(true);
    await confirmed.payload(applied).catch(() => null);
    expect(reads).toBe(1);
  });
});
