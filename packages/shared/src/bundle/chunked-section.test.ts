import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "./bundle-v2.js";
import { applyChunkedDelta, type ChunkedSection, chunkedBytes, chunkedSha256, chunkSection, type SectionChunk } from "./chunked-section.js";
import { compactSection } from "./compact-section.js";
import { diffPrefixLines } from "./prefix-delta.js";
import { pagesOf } from "./prefix-pages.js";
import { encodePrefixLines } from "./prefix-section.js";
import { chains, edit, model, POOL } from "./section-chains.test-helper.js";
import { applyTaggedDelta, SectionTags, tagSection } from "./tagged-section.js";

// The chunked section against the whole one: after every delta of random chains (chunks of a
// few lines, so that runs cross chunks, chunks empty out and grow past their bound), its bytes,
// page root, columns, added lines and touched sets are those of the whole section's delta, and it
// refuses what that refuses. Its chunks end where pages end, and those it did not touch are its
// base's own objects.

/** Every line of the chunked section as (prefix, communities, page end), in order. */
function linesOf(section: ChunkedSection): string[] {
  const out: string[] = [];
  for (const c of section.chunks) {
    for (let j = 0; j < c.count; j++) {
      const start = c.starts[j]!;
      const prefix = c.bytes.toString("latin1", start, start + c.prefixLength[j]!);
      out.push(`${prefix}|${section.tags.texts[c.tagOf[j]!]}|${c.pageEnd[j]}`);
    }
  }
  return out;
}

function shape(section: ChunkedSection) {
  section.chunks.forEach((c, i) => {
    expect(c.count).toBeGreaterThan(0);
    if (i < section.chunks.length - 1) expect(c.pageEnd[c.count - 1]).toBe(1);
    expect(c.digests.length).toBe(32 * (c.pageEnd.reduce((n, f) => n + f, 0) + (c.pageEnd[c.count - 1] === 1 ? 0 : 1)));
    expect(section.first[i + 1]! - section.first[i]!).toBe(c.count);
  });
  expect(section.first[section.chunks.length]).toBe(section.count);
}

/** The bytes the section's chunks hold in memory: every buffer they are views of, each counted once. */
function heldBytes(section: ChunkedSection): number {
  const held = new Set<ArrayBufferLike>();
  for (const c of section.chunks) for (const view of [c.bytes, c.starts, c.prefixLength, c.tagOf, c.pageEnd, c.digests]) held.add(view.buffer);
  return [...held].reduce((n, b) => n + b.byteLength, 0);
}

/** How many of the buffers the section's bytes are views of hold less than half their size of it. */
function sparseBuffers(section: ChunkedSection): number {
  // By the Buffer the chunks share, as compactSection counts: a small section's bytes may be a
  // view of Node's shared allocation pool (8 KiB on Node 20, more on Node 24), which the section
  // does not own and which would look almost empty by its ArrayBuffer.
  const live = new Map<Buffer, number>();
  for (const c of section.chunks) live.set(c.bytes, (live.get(c.bytes) ?? 0) + c.starts[c.count]! - c.starts[0]!);
  return [...live].filter(([bytes, n]) => n * 2 < bytes.length).length;
}

const refusal = (run: () => unknown) => {
  try {
    run();
    return null;
  } catch (error) {
    return (error as { code?: string }).code ?? String(error);
  }
};

describe("the chunked prefix section", () => {
  it("after each delta of a chain: the whole section's bytes, root, columns, added lines and touched sets; chunks cut at page ends; untouched chunks shared", () => {
    fc.assert(
      fc.property(chains, fc.integer({ min: 1, max: 9 }), fc.boolean(), ({ first, steps }, lines, rooted) => {
        const tags = new SectionTags();
        const flatTags = new SectionTags();
        let text = first;
        let bytes = encodePrefixLines(text);
        let flat = tagSection(bytes, flatTags);
        let chunked = chunkSection(tagSection(bytes, tags), pagesOf(bytes), lines);
        shape(chunked);
        expect(chunkedBytes(chunked)).toEqual(bytes);
        for (const s of steps) {
          const next = "lines" in s ? s.lines : edit(text, s.e);
          const script = diffPrefixLines(text, next);
          const nextBytes = encodePrefixLines(next);
          const target = { sha256: sha256Hex(nextBytes), ...(rooted ? { pagesRoot: pagesOf(nextBytes).root } : {}) };
          const change = applyChunkedDelta(chunked, script, target, lines);
          const whole = applyTaggedDelta(flat, script);
          const section = change.section;
          shape(section);
          expect(chunkedBytes(section)).toEqual(nextBytes);
          expect(chunkedSha256(section)).toBe(target.sha256);
          expect(section.root).toBe(model(next).root);
          expect(section.size).toBe(nextBytes.length);
          expect(linesOf(section)).toEqual(linesOf(chunkSection(whole.section, pagesOf(nextBytes))));
          expect([...change.added]).toEqual([...whole.added]);
          const texts = (set: Set<number>, t: SectionTags) => [...set].map((tag) => `${t.v6[tag]}${t.texts[tag]}`).sort();
          expect(texts(change.changedTags, tags)).toEqual(texts(whole.changedTags, flatTags));
          text = next;
          bytes = nextBytes;
          flat = whole.section;
          chunked = section;
        }
      }),
      { numRuns: 100 },
    );
  });

  it("refuses as the whole section's delta does: a script that does not fit, bytes that are not the signed ones (by root or by SHA-256)", () => {
    fc.assert(
      fc.property(chains, fc.integer({ min: 1, max: 6 }), fc.nat(), ({ first, steps }, lines, pick) => {
        const bytes = encodePrefixLines(first);
        const chunked = chunkSection(tagSection(bytes, new SectionTags()), pagesOf(bytes), lines);
        const s = steps[0]!;
        const next = "lines" in s ? s.lines : edit(first, s.e);
        const good = diffPrefixLines(first, next);
        const nextBytes = encodePrefixLines(next);
        const right = { sha256: sha256Hex(nextBytes), pagesRoot: pagesOf(nextBytes).root };
        // A step too many, a step too few, and a script for another base.
        const scripts = [
          Buffer.concat([good, Buffer.from("=1\n")]),
          Buffer.from(`rl-prefix-delta/1\n=${Math.max(1, first.length - 1)}\n`),
          diffPrefixLines([...first, `${POOL[0]}\tx`], next),
        ];
        const script = scripts[pick % scripts.length]!;
        const flat = tagSection(bytes, new SectionTags());
        const wholeRefusal = refusal(() => {
          const whole = applyTaggedDelta(flat, script);
          if (sha256Hex(whole.section.bytes) !== right.sha256) throw Object.assign(new Error(), { code: "digest_mismatch" });
        });
        expect(refusal(() => applyChunkedDelta(chunked, script, right, lines))).toBe(wholeRefusal);
        // The right script, the wrong target: refused either way it is checked.
        if (next.length > 0 || first.length > 0) {
          const other = { sha256: sha256Hex(Buffer.from("x")), pagesRoot: sha256Hex(Buffer.from("y")) };
          expect(refusal(() => applyChunkedDelta(chunked, good, other, lines))).toBe("digest_mismatch");
          expect(refusal(() => applyChunkedDelta(chunked, good, { sha256: other.sha256 }, lines))).toBe("digest_mismatch");
        }
      }),
      { numRuns: 200 },
    );
  });

  it("compacted once deltas rebuilt some of it, a section holds no buffer less than half used, and reads the same lines, as does an older section sharing its chunks", () => {
    fc.assert(
      fc.property(chains, fc.integer({ min: 1, max: 9 }), ({ first, steps }, lines) => {
        const tags = new SectionTags();
        let text = first;
        const bytes = encodePrefixLines(text);
        const sections: ChunkedSection[] = [chunkSection(tagSection(bytes, tags), pagesOf(bytes), lines)];
        const texts = [bytes];
        for (const s of steps) {
          const next = "lines" in s ? s.lines : edit(text, s.e);
          const nextBytes = encodePrefixLines(next);
          sections.push(applyChunkedDelta(sections.at(-1)!, diffPrefixLines(text, next), { sha256: sha256Hex(nextBytes) }, lines).section);
          texts.push(nextBytes);
          text = next;
        }
        const last = sections.at(-1)!;
        const before = sections.map(linesOf);
        const rebuilt = last.rebuilt;
        const sparse = sparseBuffers(last);
        const compacted = compactSection(last, 0);
        expect(compacted).toBe(rebuilt > 0 && sparse > 0);
        if (rebuilt > 0) expect(sparseBuffers(last)).toBe(0);
        expect(last.rebuilt).toBe(0);
        sections.forEach((section, i) => {
          expect(chunkedBytes(section)).toEqual(texts[i]);
          expect(linesOf(section)).toEqual(before[i]);
          shape(section);
        });
      }),
      {
        numRuns: 100,
        // A section of three lines, in Node's shared pool: by the pool's ArrayBuffer it looked sparse.
        examples: [
          [
            {
              first: ["10.0.2.0/24\t65000:100", "10.0.3.0/24\t65000:100", "10.0.4.0/24\t65000:100"],
              steps: [{ e: { drop: [], retag: [], add: [0], cut: 0 } }],
            },
            1,
          ],
        ],
      },
    );
  });

  it("a delta of one line rebuilds the chunk that held it (and at most the next): every other chunk is its base's own object", () => {
    const pool = POOL.slice(0, 3000).map((p, i) => `${p}\t65000:${i % 3}`);
    const bytes = encodePrefixLines(pool);
    const base = chunkSection(tagSection(bytes, new SectionTags()), pagesOf(bytes), 8);
    for (const at of [0, 1, 1500, 2999]) {
      const next = pool.filter((_, i) => i !== at);
      const nextBytes = encodePrefixLines(next);
      const { section, kept } = applyChunkedDelta(base, diffPrefixLines(pool, next), { sha256: sha256Hex(nextBytes), pagesRoot: pagesOf(nextBytes).root }, 8);
      const shared = section.chunks.filter((c) => base.chunks.includes(c));
      expect(shared.length).toBeGreaterThanOrEqual(base.chunks.length - 2);
      expect(chunkedBytes(section)).toEqual(nextBytes);
      // Each rebuilt chunk names the runs of its base's lines it kept: the same lines, and every line but the one dropped.
      const line = (c: SectionChunk, j: number) => c.bytes.toString("latin1", c.starts[j], c.starts[j + 1]);
      let keptLines = 0;
      for (const c of section.chunks.filter((c) => !shared.includes(c))) {
        for (const run of kept.get(c) ?? []) {
          expect(base.chunks).toContain(run.chunk);
          for (let j = 0; j < run.n; j++) expect(line(c, run.at + j)).toBe(line(run.chunk, run.from + j));
          keptLines += run.n;
        }
      }
      expect(keptLines + shared.reduce((n, c) => n + c.count, 0)).toBe(pool.length - 1);
    }
  });

  it("compacts the section a run of deltas over different lines leaves spread over many buffers", () => {
    const tags = new SectionTags();
    const pool = POOL.slice(0, 3000).map((p, i) => `${p}\t65000:${i % 3}`);
    let text = pool.filter((_, i) => i % 2 === 0);
    const bytes = encodePrefixLines(text);
    let section = chunkSection(tagSection(bytes, tags), pagesOf(bytes), 8);
    // Each delta swaps a different stretch of lines in: chunk after chunk rebuilt, each in the buffer of its delta.
    for (let d = 0; d < 30; d++) {
      const next = pool.filter((_, i) => (Math.floor(i / 100) === d ? i % 2 === 1 : i % 2 === 0) || (i < d * 100 && i % 2 === 1));
      const nextBytes = encodePrefixLines(next);
      section = applyChunkedDelta(section, diffPrefixLines(text, next), { sha256: sha256Hex(nextBytes) }, 8).section;
      text = next;
    }
    const held = heldBytes(section);
    expect(held).toBeGreaterThan(3 * section.size);
    expect(compactSection(section, 0)).toBe(true);
    // At most twice what the section read whole holds (its bytes and columns in one buffer each).
    const whole = encodePrefixLines(text);
    expect(heldBytes(section)).toBeLessThanOrEqual(2 * heldBytes(chunkSection(tagSection(whole, new SectionTags()), pagesOf(whole), 8)));
    expect(sparseBuffers(section)).toBe(0);
    expect(chunkedBytes(section)).toEqual(whole);
    expect(compactSection(section, 0)).toBe(false);
  });

  it("leaves be the buffers still mostly in use: a delta of a few lines moves nothing, and the buffer of a delta all rebuilt since is not held", () => {
    const tags = new SectionTags();
    const pool = POOL.slice(0, 3000).map((p, i) => `${p}\t65000:${i % 3}`);
    const bytes = encodePrefixLines(pool);
    const whole = chunkSection(tagSection(bytes, tags), pagesOf(bytes), 8);
    const next = pool.filter((_, i) => i !== 1500);
    const nextBytes = encodePrefixLines(next);
    const section = applyChunkedDelta(whole, diffPrefixLines(pool, next), { sha256: sha256Hex(nextBytes) }, 8).section;
    const buffers = () => new Set(section.chunks.map((c) => c.bytes.buffer));
    const before = buffers();
    expect(before.size).toBe(2);
    // The whole section's buffer is nearly all in use, and so is the delta's: nothing is copied.
    expect(compactSection(section, 0)).toBe(false);
    expect(buffers()).toEqual(before);
    // The line back: the first delta's chunks rebuilt again, its buffer no longer held by the section.
    const back = applyChunkedDelta(section, diffPrefixLines(next, pool), { sha256: sha256Hex(bytes) }, 8).section;
    expect(compactSection(back, 0)).toBe(false);
    expect(new Set(back.chunks.map((c) => c.bytes.buffer)).size).toBe(2);
    expect(chunkedBytes(back)).toEqual(bytes);
  });
});
