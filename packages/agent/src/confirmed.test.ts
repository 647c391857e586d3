import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { diffPrefixLines, encodePrefixSection, SectionTags, sha256Hex, splitSection } from "@rlc/shared/bundle";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { applyKeptDelta, keepSection } from "./bundle/kept-prefixes.js";
import type { VerifiedKept } from "./bundle/verify-kept.js";
import { ConfirmedRevision } from "./confirmed.js";
import { StateStore } from "./state.js";

// A delta's section is written into memory the agent reads no more: after an apply there is
// always such room, and it is never the memory of the section BIRD runs.

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

describe("ConfirmedRevision's room for the next delta", () => {
  it("is made after a full apply, then is the store of the section confirmed before, never the running one's", async () => {
    const state = new StateStore(join(dir, "state"));
    await state.init();
    const tags = new SectionTags();
    const confirmed = new ConfirmedRevision(state, tags);
    const record = (revision: number, verified: Partial<VerifiedKept>) =>
      confirmed.record(
        Buffer.from("bundle"),
        { revision_id: revision, sequence: revision, digest: "sha256:00", applied_at: new Date().toISOString() },
        verified as VerifiedKept,
      );

    const a = section(300, 0);
    const keptA = keepSection(1, a, tags);
    await record(1, { prefixSection: a, kept: keptA, delta: null, payload: { revision_id: 1 } as VerifiedKept["payload"] });
    expect(confirmed.room()).toBeNull();
    confirmed.prepareRoom();
    const first = confirmed.room();
    expect(first?.bytes.length).toBeGreaterThanOrEqual(a.length);

    let kept = keptA;
    let bytes = a;
    const stores = [first];
    for (let revision = 2; revision <= 5; revision++) {
      const next = section(300, revision * 7);
      const script = diffPrefixLines(splitSection(bytes), splitSection(next));
      if (!kept) throw new Error("not kept");
      const rebuilt = applyKeptDelta(kept, script, { revisionId: revision, sha256: sha256Hex(next), room: confirmed.room() });
      expect(rebuilt.kept.section.bytes.equals(next)).toBe(true);
      // Built in the room it was given, which was not the running section's memory.
      expect(rebuilt.kept.section.store).toBe(confirmed.room());
      expect(rebuilt.kept.section.store).not.toBe(kept.section.store);
      await record(revision, {
        prefixSection: rebuilt.kept.section.bytes,
        kept: rebuilt.kept,
        delta: rebuilt.delta,
        payload: { revision_id: revision } as VerifiedKept["payload"],
      });
      confirmed.prepareRoom();
      // The room now is what the section before held (none made: two stores take turns).
      if (revision > 2) expect(confirmed.room()).toBe(kept.section.store);
      stores.push(confirmed.room());
      kept = rebuilt.kept;
      bytes = next;
    }
    expect(new Set(stores.slice(1)).size).toBe(2);
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
    expect((await confirmed.prefixes(applied))?.section.bytes.equals(a)).toBe(true);
    await confirmed.payload(applied).catch(() => null);
    expect(reads).toBe(1);
  });
});
