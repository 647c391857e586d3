// What a lookup view's snapshot index of 1,200,000 prefixes holds, in the layout it had (a
// string a prefix and a buildPrefixIndex over their positions) and in the one it has
// (buildPrefixTextIndex: typed arrays only), and what a full collection costs with it alive.
// Each layout is built in its own process (so one's garbage does not fall on the other's
// figures), the runs interleaved; medians printed. Prints figures; asserts no time.
//   npx turbo run build --filter=@rlc/shared && node --expose-gc bench/lookup-view-heap.mjs
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { buildPrefixIndex, buildPrefixTextIndex } from "../packages/shared/dist/prefix/index.js";
import { publicSlash24s, xorshift } from "./random.mjs";

const N = 1_200_000;
const RUNS = Number(process.env.RUNS ?? 3);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const MiB = (b) => (b / 2 ** 20).toFixed(1);

/** Distinct public /24s, as the bench's CDN feed (deterministic). */
function texts() {
  return publicSlash24s(N, xorshift(42));
}

/** Built in a function, so no temporary of the build outlives it on the caller's stack. */
function build(layout) {
  if (layout === "strings") {
    const prefixes = texts();
    const index = buildPrefixIndex(
      Array.from({ length: N }, (_, i) => i),
      (i) => prefixes[i],
    );
    return { matchText: (a) => index.lookup(a).map((i) => prefixes[i]) };
  }
  const index = buildPrefixTextIndex(texts());
  return { matchText: (a) => index.lookup(a).map((i) => index.text(i)) };
}

function measure(layout) {
  const held = () => {
    globalThis.gc();
    globalThis.gc();
    const m = process.memoryUsage();
    return [m.heapUsed, m.arrayBuffers];
  };
  const [h0, b0] = held();
  const view = build(layout);
  const [h1, b1] = held();
  const pauses = Array.from({ length: 7 }, () => {
    const t = performance.now();
    globalThis.gc();
    return performance.now() - t;
  });
  const probe = view.matchText("11.0.0.1").length; // keeps the view alive to here
  return { heap: h1 - h0, buffers: b1 - b0, gcMs: median(pauses), probe };
}

if (process.argv[2] === "--child") {
  process.stdout.write(JSON.stringify(measure(process.argv[3])));
} else {
  if (typeof globalThis.gc !== "function") throw new Error("run with node --expose-gc");
  const me = fileURLToPath(import.meta.url);
  const results = { strings: [], typed: [] };
  for (let r = 0; r < RUNS; r++) {
    for (const layout of Object.keys(results)) {
      results[layout].push(JSON.parse(execFileSync(process.execPath, ["--expose-gc", me, "--child", layout], { encoding: "utf8" })));
    }
  }
  console.log(`lookup view of ${N.toLocaleString()} snapshot prefixes, ${RUNS} runs of each layout (medians)`);
  for (const [layout, rs] of Object.entries(results)) {
    console.log(
      `  ${layout === "strings" ? "a string a prefix      " : "typed arrays only      "}` +
        `JS heap ${MiB(median(rs.map((x) => x.heap)))} MiB + array buffers ${MiB(median(rs.map((x) => x.buffers)))} MiB; ` +
        `full GC with it alive ${median(rs.map((x) => x.gcMs)).toFixed(1)} ms (runs: ${rs.map((x) => x.gcMs.toFixed(0)).join(", ")})`,
    );
  }
}
