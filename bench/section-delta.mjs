// The agent's delta apply alone, in process: the chunked section it keeps (chunked-section.ts:
// untouched chunks shared, only the rebuilt chunks' pages hashed) beside the whole section it
// kept before (tagged-section.ts's applyTaggedDelta into new memory, then updatePages), for the
// same deltas of `BENCH_PREFIXES` (1.2M) prefixes: `BENCH_EDITS` (1,100: refresh-agents.mjs's
// 1 % of one feed) prefixes of one set, spread over the table, dropped and put back. CPU medians
// of the last 30 of 40 rounds (the first warm the JIT), checked against the signed page root.
//   npx turbo run build --output-logs=errors-only && node --expose-gc bench/section-delta.mjs
import { loadavg } from "node:os";
import {
  applyChunkedDelta,
  applyTaggedDelta,
  chunkSection,
  compactSection,
  diffPrefixLines,
  encodePrefixSection,
  pagesOf,
  pagesOfLines,
  SectionTags,
  sha256Hex,
  splitSection,
  tagSection,
  updatePages,
} from "../packages/shared/dist/bundle/index.js";
import { asnInput } from "./asn-input.mjs";

const PREFIXES = Number(process.env.BENCH_PREFIXES ?? 1_200_000);
const EDITS = Number(process.env.BENCH_EDITS ?? 1100);
const ROUNDS = 40;

const input = asnInput(PREFIXES, 100);
const a = encodePrefixSection(input.content(0, null));
const b = encodePrefixSection(input.thinned(EDITS));
const scripts = [diffPrefixLines(splitSection(a), splitSection(b)), diffPrefixLines(splitSection(b), splitSection(a))];
const targets = [b, a].map((bytes) => ({ sha256: sha256Hex(bytes), pagesRoot: pagesOf(bytes).root }));
const tagged = tagSection(a, new SectionTags());
const pages = pagesOfLines(tagged);
let chunked = chunkSection(tagged, pages);
let whole = { section: tagSection(a, new SectionTags()), pages };

const cpu = (f) => {
  const t0 = process.cpuUsage();
  f();
  const t = process.cpuUsage(t0);
  return (t.user + t.system) / 1000;
};
const times = { chunked: [], whole: [] };
for (let r = 0; r < ROUNDS; r++) {
  const script = scripts[r % 2];
  const target = targets[r % 2];
  times.chunked.push(
    cpu(() => {
      chunked = applyChunkedDelta(chunked, script, target).section;
      compactSection(chunked);
    }),
  );
  times.whole.push(
    cpu(() => {
      let next = null;
      const change = applyTaggedDelta(whole.section, script, (_, lines, map) => {
        next = updatePages(whole.pages, lines, map);
        if (next.root !== target.pagesRoot) throw new Error("the whole section's delta gave another root");
      });
      whole = { section: change.section, pages: next };
    }),
  );
  if (chunked.root !== target.pagesRoot || whole.pages.root !== target.pagesRoot) throw new Error(`round ${r}: not the signed root`);
}
const median = (xs) => [...xs].slice(10).sort((x, y) => x - y)[Math.floor((xs.length - 10) / 2)];
const [c, w] = [median(times.chunked), median(times.whole)];
console.log(
  JSON.stringify({
    prefixes: PREFIXES,
    edits: EDITS,
    chunks: chunked.chunks.length,
    wholeMs: +w.toFixed(1),
    chunkedMs: +c.toFixed(1),
    ratio: +(w / c).toFixed(1),
    load: +loadavg()[0].toFixed(1),
  }),
);
