// rl-prefix-pages/1 at a tenant's size: 1.2M prefix lines (~32 MB). Prints, as medians of
// interleaved rounds: pagesOf of the whole section against one SHA-256 of it (what a full
// section costs the controller and a full bundle the agent), and for a delta of ~1,100 scattered
// edits (~1 % of the lines) the check an agent makes today, SHA-256 of the rebuilt section,
// against updatePages from the base's pages (the same root as pagesOf, asserted), with
// applyTaggedDelta and tagSection beside them for scale.
//   npx turbo run build --output-logs=errors-only && node --expose-gc bench/prefix-pages.mjs
//   BENCH_LINES=1200000 BENCH_EDITS=1100 BENCH_ROUNDS=9
// BENCH_BASELINE=/path/to/an/older/packages/shared/dist also times that build's tagSection and
// applyTaggedDelta (before the pageEnd column), interleaved with this one's.
import { createHash } from "node:crypto";
import { pathToFileURL } from "node:url";
import { applyTaggedDelta, diffPrefixLines, encodePrefixLines, pagesOf, SectionTags, tagSection, updatePages } from "@rlc/shared/bundle";

const LINES = Number(process.env.BENCH_LINES ?? 1_200_000);
const EDITS = Number(process.env.BENCH_EDITS ?? 1_100);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);
const baseline = process.env.BENCH_BASELINE ? await import(pathToFileURL(`${process.env.BENCH_BASELINE}/bundle/index.js`).href) : null;

// Communities of a few lengths, as a tenant's modules tag them: ~27 bytes a line on average.
const SETS = ["65000:100", "65000:100,65000:2", "65000:300", "65000:1,65010:7", "64512:1"];
const prefixAt = (i) => `${10 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}.0/24`;
const baseLines = Array.from({ length: LINES }, (_, i) => `${prefixAt(i)}\t${SETS[(i >> 6) % SETS.length]}`);
// Each edit at a spread-out place: 5 lines withdrawn, 5 re-tagged, and 1 new prefix (not in the base).
const nextLines = [];
const step = Math.floor(LINES / EDITS);
for (let i = 0, e = 0; i < LINES; i++) {
  const at = i % step;
  if (e < EDITS && at < 10) {
    if (at < 5) continue;
    nextLines.push(`${prefixAt(i)}\t${SETS[((i >> 6) + 1) % SETS.length]}`);
    if (at === 9) {
      nextLines.push(`${prefixAt(i)}`.replace(/\/24$/, "/25").replace(/\.0\/25$/, ".128/25") + `\t${SETS[0]}`);
      e++;
    }
    continue;
  }
  nextLines.push(baseLines[i]);
}
const base = encodePrefixLines(baseLines);
const next = encodePrefixLines(nextLines);
const delta = diffPrefixLines(baseLines, nextLines);
baseLines.length = 0;
nextLines.length = 0;
console.log(`section: ${LINES} lines, ${(base.length / 1e6).toFixed(1)} MB; delta of ${EDITS} edits: ${delta.length} bytes`);

const tags = new SectionTags();
const tagged = tagSection(base, tags);
const basePages = pagesOf(base);
const change = applyTaggedDelta(tagged, delta);
if (!change.section.bytes.equals(next)) throw new Error("the delta does not rebuild the next section");
const updated = updatePages(basePages, change.section, change);
const want = pagesOf(next);
if (updated.root !== want.root) throw new Error("updatePages is not pagesOf");
// The base's digests blanked: the pages that come out not blank are those updatePages hashed.
const blank = updatePages({ ...basePages, digests: Buffer.alloc(basePages.digests.length) }, change.section, change);
let hashed = 0;
let hashedBytes = 0;
for (let k = 0; k < blank.ends.length; k++) {
  if (!blank.digests.subarray(k * 32, (k + 1) * 32).some((b) => b !== 0)) continue;
  hashed++;
  hashedBytes += change.section.starts[blank.ends[k]] - change.section.starts[k === 0 ? 0 : blank.ends[k - 1]];
}
console.log(
  `pages: ${basePages.ends.length} in the base, ${updated.ends.length} after the delta, ${hashed} of them hashed (${(hashedBytes / 1e6).toFixed(2)} MB)`,
);

const oldTags = baseline ? new baseline.SectionTags() : null;
const oldTagged = baseline ? baseline.tagSection(base, oldTags) : null;
const cases = {
  "SHA-256 of the whole section": () => createHash("sha256").update(base).digest(),
  pagesOf: () => pagesOf(base),
  "SHA-256 of the rebuilt section (today's delta check)": () => createHash("sha256").update(change.section.bytes).digest(),
  "updatePages (the delta check with pages)": () => updatePages(basePages, change.section, change),
  "applyTaggedDelta (no check)": () => applyTaggedDelta(tagged, delta),
  tagSection: () => tagSection(base, tags),
  ...(baseline
    ? {
        "applyTaggedDelta, baseline": () => baseline.applyTaggedDelta(oldTagged, delta),
        "tagSection, baseline": () => baseline.tagSection(base, oldTags),
      }
    : {}),
};
// CPU time of this process (all synchronous, on this thread): on a shared machine it moves less
// than the wall time, which counts the waits for a core.
const times = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
const walls = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
for (let round = -1; round < ROUNDS; round++) {
  for (const [name, run] of Object.entries(cases)) {
    globalThis.gc?.();
    const wall = process.hrtime.bigint();
    const cpu = process.cpuUsage();
    // The quick ones 10 times a round: a few ms alone are mostly the noise of the machine.
    const reps = name.includes("SHA-256") || name.startsWith("updatePages") ? 10 : 1;
    for (let i = 0; i < reps; i++) run();
    const used = process.cpuUsage(cpu);
    if (round < 0) continue;
    times[name].push((used.user + used.system) / 1000 / reps);
    walls[name].push(Number(process.hrtime.bigint() - wall) / 1e6 / reps);
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
console.log(`${"".padEnd(56)}   CPU, median (min–max)       wall, median`);
for (const [name, xs] of Object.entries(times)) {
  console.log(
    `${name.padEnd(56)} ${median(xs).toFixed(2).padStart(9)} ms  (${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)})  ${median(walls[name]).toFixed(2).padStart(9)} ms`,
  );
}
const ratio = (a, b) => (median(times[a]) / median(times[b])).toFixed(2);
console.log(`pagesOf / SHA-256 of the whole: ${ratio("pagesOf", "SHA-256 of the whole section")}x`);
console.log(
  `updatePages / SHA-256 of the rebuilt section: ${ratio("updatePages (the delta check with pages)", "SHA-256 of the rebuilt section (today's delta check)")}x`,
);
if (baseline) {
  console.log(`tagSection / baseline: ${ratio("tagSection", "tagSection, baseline")}x`);
  console.log(`applyTaggedDelta / baseline: ${ratio("applyTaggedDelta (no check)", "applyTaggedDelta, baseline")}x`);
}
