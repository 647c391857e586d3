// The lookup's revision layer when a refresh makes a new revision: built whole from the new
// content, beside carried over from the last revision's layer by the change between the two
// contents (what the lookup service does while the last content is in memory). 1,200,000
// prefixes in a revision's order; the next revision drops 1 %, gives 1 % other communities and
// adds 1 %. Runs interleaved, medians; the two layers' answers compared on 100,000 addresses.
// Prints figures; asserts no time.
//   npx turbo run build && node --expose-gc bench/lookup-revision-layer.mjs      # RUNS (5)
import { performance } from "node:perf_hooks";
import { parseAddress } from "@rlc/shared/prefix";
import { contentFromEntries } from "../packages/controller/dist/services/revisions/revision-content.js";
import { buildRevisionLayer, longestInLayer, nextRevisionLayer } from "../packages/controller/dist/services/route-lists/lookup-revision.js";

const N = 1_200_000;
const RUNS = Number(process.env.RUNS ?? 5);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const modules = ["00000000-0000-0000-0000-000000000001"];
const prefixAt = (i) => `${11 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}.0/24`;
const first = Array.from({ length: N }, (_, i) => [prefixAt(i), [`65000:${i % 5}`], modules]);
const next = [];
for (let i = 0; i < N; i++) {
  if (i % 100 === 3) continue;
  next.push(i % 100 === 7 ? [first[i][0], ["65000:9"], modules] : first[i]);
  if (i % 100 === 11) next.push([first[i][0].replace("/24", "/25"), ["65000:8"], modules]);
}
const before = contentFromEntries(first, []);
const after = contentFromEntries(next, []);
const layer = buildRevisionLayer(1, before);

const built = [];
const carried = [];
let last;
for (let r = 0; r < RUNS; r++) {
  globalThis.gc?.();
  let t = performance.now();
  const whole = buildRevisionLayer(2, after);
  built.push(performance.now() - t);
  globalThis.gc?.();
  t = performance.now();
  const over = nextRevisionLayer(layer, 2, after);
  carried.push(performance.now() - t);
  if (over.index !== layer.index) throw new Error("the layer was built whole, not carried over");
  last = { whole, over };
}
let differ = 0;
for (let k = 0; k < 100_000; k++) {
  const address = parseAddress(`${11 + ((k * 7) % 19)}.${(k * 13) & 255}.${(k * 31) & 255}.${k & 255}`);
  if (JSON.stringify(longestInLayer(last.whole, address)) !== JSON.stringify(longestInLayer(last.over, address))) differ++;
}
console.log(`revision layer of ${N.toLocaleString()} prefixes, the next revision 1 % dropped, 1 % re-tagged, 1 % added; ${RUNS} runs (medians)`);
console.log(`  built whole     ${median(built).toFixed(0)} ms  (runs: ${built.map((x) => x.toFixed(0)).join(", ")})`);
console.log(
  `  carried over    ${median(carried).toFixed(0)} ms  (runs: ${carried.map((x) => x.toFixed(0)).join(", ")}), ${(median(built) / median(carried)).toFixed(1)}× quicker`,
);
console.log(`  answers on 100,000 addresses: ${differ === 0 ? "the same" : `${differ} DIFFER`}`);
