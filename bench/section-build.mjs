// The controller's step between a refresh's revision and its apply, at a tenant's size (1.2M
// prefixes, ~1 % changed by one incremental build): the new revision's full prefix section and
// the delta from the revision the speakers run. Medians of interleaved rounds, CPU and wall:
//   before  the delta by a walk over both contents (diffPrefixColumns), the full section written
//           of the base's bytes (applyPrefixDeltaBytes), hashed, paged (pagesOf), sealed and hex-
//           encoded as the driver sends a bytea (what the refresh's transaction did);
//   now     the delta by a walk over the build's replaced ranges only (diffPrefixSplices), the
//           full section made of the base's kept in columns (applyDeltaColumns: only the touched
//           pages hashed) in room made before (after the commit before: not timed), hashed; only
//           the delta sealed and sent (the full section is stored as the base's and the delta:
//           its body is written after the commit, not timed here).
//   npx turbo run build --output-logs=errors-only && node bench/section-build.mjs
//   BENCH_LINES=1200000 BENCH_EDITS=1100 BENCH_ROUNDS=7
import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";
import { applyPrefixDeltaBytes, diffPrefixColumns, diffPrefixSplices, encodePrefixColumns, pagesOf, sectionStore, sha256Hex } from "@rlc/shared/bundle";
import { sealEnvelope } from "../packages/controller/dist/lib/sealed-envelope.js";
import { createSecretBox } from "../packages/controller/dist/lib/secret-box.js";
import { applyDeltaColumns, columnsOf } from "../packages/controller/dist/services/deploy/section-columns.js";

const LINES = Number(process.env.BENCH_LINES ?? 1_200_000);
const EDITS = Number(process.env.BENCH_EDITS ?? 1_100);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// Communities as a tenant's modules tag them; each edit: 5 prefixes withdrawn, 5 re-tagged, 1 new.
const SETS = [["65000:100"], ["65000:100", "65000:2"], ["65000:300"], ["65000:1", "65010:7"], ["64512:1"]];
const prefixAt = (i) => `${10 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}.0/24`;
const base = { prefixes: [], sets: [] };
const next = { prefixes: [], sets: [] };
const splices = [];
const step = Math.floor(LINES / EDITS);
for (let i = 0, e = 0; i < LINES; i++) {
  base.prefixes.push(prefixAt(i));
  base.sets.push(SETS[(i >> 6) % SETS.length]);
  const at = i % step;
  if (e < EDITS && at < 10) {
    if (at === 0) splices.push({ from: i, to: i + 10, at: next.prefixes.length, count: 6 });
    if (at < 5) continue;
    next.prefixes.push(prefixAt(i));
    next.sets.push(SETS[((i >> 6) + 1) % SETS.length]);
    if (at === 9) {
      next.prefixes.push(prefixAt(i).replace(/\.0\/24$/, ".128/25"));
      next.sets.push(SETS[0]);
      e++;
    }
    continue;
  }
  next.prefixes.push(prefixAt(i));
  next.sets.push(base.sets[i]);
}
const column = (c) => ({ length: c.prefixes.length, prefixAt: (i) => c.prefixes[i], communitiesAt: (i) => c.sets[i] });
const none = { length: 0, prefixAt: () => "", communitiesAt: () => [] };
const columns = (c) => ({ v4: column(c), v6: none });
const baseBytes = encodePrefixColumns(column(base), none);
const kept = columnsOf(baseBytes);
const box = createSecretBox(randomBytes(32));

const before = { wall: [], cpu: [] };
const now = { wall: [], cpu: [] };
let checked = false;
for (let r = 0; r < ROUNDS; r++) {
  for (const [side, run] of r % 2
    ? [
        ["now", runNow],
        ["before", runBefore],
      ]
    : [
        ["before", runBefore],
        ["now", runNow],
      ]) {
    const res = await run();
    (side === "now" ? now : before).wall.push(res.wall);
    (side === "now" ? now : before).cpu.push(res.cpu);
  }
}

async function runBefore() {
  const cpu = process.cpuUsage();
  const t = performance.now();
  const delta = diffPrefixColumns(columns(base), columns(next));
  const body = applyPrefixDeltaBytes(baseBytes, delta);
  const sha = sha256Hex(body);
  const root = pagesOf(body).root;
  const sealed = await sealEnvelope(box, body);
  const hex = sealed.toString("hex").length + (await sealEnvelope(box, delta)).toString("hex").length;
  const used = process.cpuUsage(cpu);
  if (!checked) globalThis.expected = { sha, root, delta: delta.length, hex };
  return { wall: performance.now() - t, cpu: (used.user + used.system) / 1000 };
}

async function runNow() {
  // The room the controller makes after the commit before (not timed: a quiet moment).
  const room = sectionStore(kept.section.bytes.length, kept.section.count, true);
  await new Promise((resolve) => setTimeout(resolve, 100));
  const cpu = process.cpuUsage();
  const t = performance.now();
  const delta = diffPrefixSplices(columns(base), columns(next), splices);
  const made = applyDeltaColumns(kept, delta, room);
  const sha = sha256Hex(made.section.bytes);
  (await sealEnvelope(box, delta)).toString("hex");
  const used = process.cpuUsage(cpu);
  if (!checked && globalThis.expected) {
    const e = globalThis.expected;
    if (sha !== e.sha || made.pages.root !== e.root || delta.length !== e.delta) throw new Error("the two paths disagree");
    checked = true;
  }
  return { wall: performance.now() - t, cpu: (used.user + used.system) / 1000 };
}

const f = (ms) => `${ms.toFixed(0)} ms`;
console.log(
  `${LINES.toLocaleString("en")} prefixes, ${EDITS} edits (${splices.length} replaced ranges), section ${(baseBytes.length / 2 ** 20).toFixed(1)} MiB; ${ROUNDS} interleaved rounds, medians`,
);
console.log(`  before  wall ${f(median(before.wall))}, CPU ${f(median(before.cpu))}`);
console.log(`  now     wall ${f(median(now.wall))}, CPU ${f(median(now.cpu))}`);
console.log(
  `  ratio   wall ${(median(before.wall) / median(now.wall)).toFixed(1)}×, CPU ${(median(before.cpu) / median(now.cpu)).toFixed(1)}×  (same SHA-256, page root and delta: checked)`,
);
