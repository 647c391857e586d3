// How a revision is stored: whole (every revision, as before migration 0025) against as a change
// against its parent (revision-change.ts), in one run on PostgreSQL, for a chain of revisions of
// ~1M prefixes each differing from the one before by 1 % (half withdrawn, half new, as a CDN
// feed's change): the guard, the write, the bytes stored, a cold read (nothing decoded in
// memory: the chain is walked), and the diff of a revision and its parent (cold and warm) and of
// two revisions further apart; beside the guard and the diff as they were computed before (the
// walk over both whole lists) on the same contents. Prints medians and ratios; asserts no time.
//
//   npx turbo run build && node bench/revision-store.mjs
//   BENCH_PREFIXES=258000 BENCH_REVISIONS=6 BENCH_CHANGE=0.01 node bench/revision-store.mjs

import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import { diffTagged } from "@rlc/shared/prefix";
import postgres from "postgres";
import { createMemoryBus } from "../packages/controller/dist/bus/memory-bus.js";
import { migrate } from "../packages/controller/dist/db/migrate.js";
import { createRevisionCommitter } from "../packages/controller/dist/services/revisions/revision-commit.js";
import { RevisionFamily, taggedPrefixes, withdrawnCount } from "../packages/controller/dist/services/revisions/revision-content.js";
import { diffRevisions } from "../packages/controller/dist/services/revisions/revision-diff.js";
import { createRevisionStore } from "../packages/controller/dist/services/revisions/revision-store.js";
import { xorshift } from "./random.mjs";

const N = Number(process.env.BENCH_PREFIXES || 1_000_000);
const K = Number(process.env.BENCH_REVISIONS || 6);
const CHANGE = Number(process.env.BENCH_CHANGE || 0.01);
const MODULES = 20;
const adminUrl = process.env.TEST_DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres";
const dbName = `rlc_bench_store_${process.pid}`;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ms = (x) => `${x.toFixed(0)} ms`;
const mib = (b) => `${(b / 2 ** 20).toFixed(2)} MiB`;

// The universe: IPv4 /24s in 11-99.x.x and IPv6 /48s, in address order; each revision holds
// about N of them (a twentieth IPv6), tagged by one of 20 modules in 5 communities.
const rnd = xorshift(11);
const U4 = Math.round(N * 0.95 * 1.1);
const U6 = Math.min(65_000, Math.round(N * 0.05 * 1.1));
const first24 = 11 * 65536;
const step = Math.floor((89 * 65536) / U4);
const v4Text = (k) => {
  const x = first24 + k * step;
  return `${x >>> 16}.${(x >>> 8) & 255}.${x & 255}.0/24`;
};
const v6Text = (k) => `2a00:${(k + 1).toString(16)}:1::/48`; // canonical, in order while k < 65535
const modules = Array.from({ length: MODULES }, (_, k) => `00000000-0000-0000-0000-0000000001${String(k).padStart(2, "0")}`);
const tags = modules.map((_, k) => ({ communities: [`65000:${100 + (k % 5)}`], modules: [k] }));
const owner = { modules, tags };
/** A content from the membership bitmaps (1 + module index, 0 = absent). */
function contentOf(in4, in6) {
  const family = (inSet, text) => {
    const prefixes = [];
    const t = [];
    for (let k = 0; k < inSet.length; k++) {
      if (!inSet[k]) continue;
      prefixes.push(text(k));
      t.push(inSet[k] - 1);
    }
    return new RevisionFamily(prefixes, Uint32Array.from(t), owner);
  };
  return { ...owner, v4: family(in4, v4Text), v6: family(in6, v6Text) };
}
const in4 = new Uint8Array(U4);
const in6 = new Uint8Array(U6);
const fill = (set, share) => {
  for (let k = 0; k < set.length; k++) if (rnd() < share) set[k] = 1 + Math.floor(k / (set.length / MODULES));
};
fill(in4, 1 / 1.1);
fill(in6, 1 / 1.1);
/** Withdraws CHANGE/2 of the prefixes and adds as many new ones, in one module's part. */
const edit = (set) => {
  const m = Math.floor(rnd() * MODULES);
  const lo = Math.floor((m * set.length) / MODULES);
  const hi = Math.floor(((m + 1) * set.length) / MODULES);
  const n = Math.round((set.length / 1.1) * (CHANGE / 2));
  const absent = [];
  for (let k = lo; k < hi; k++) if (!set[k]) absent.push(k);
  for (let removed = 0; removed < n; ) {
    const k = lo + Math.floor(rnd() * (hi - lo));
    if (set[k]) {
      set[k] = 0;
      removed++;
    }
  }
  // New prefixes where there were none before this edit.
  for (let added = 0; added < n && absent.length; added++) set[absent.splice(Math.floor(rnd() * absent.length), 1)[0]] = m + 1;
};
const contents = [];
for (let r = 0; r < K; r++) {
  if (r > 0) {
    edit(in4);
    edit(in6);
  }
  contents.push(contentOf(in4, in6));
}
const count = (c) => c.v4.length + c.v6.length;
console.log(`${K} revisions of ~${count(contents[0]).toLocaleString()} prefixes, each ${(CHANGE * 100).toFixed(1)} % from the one before`);

const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
await admin.unsafe(`CREATE DATABASE ${dbName}`);
const dbUrl = new URL(adminUrl);
dbUrl.pathname = `/${dbName}`;
const sql = postgres(dbUrl.toString(), { max: 4, onnotice: () => {} });
try {
  await migrate(sql);
  const runs = {};
  for (const [mode, chain] of [
    ["whole", { maxDepth: 0 }],
    ["change", {}],
  ]) {
    const tenantId = randomUUID();
    await sql`INSERT INTO tenants (id, name, created_at) VALUES (${tenantId}, ${mode}, now())`;
    const store = createRevisionStore({ chain });
    const committer = createRevisionCommitter({ revisions: store, bus: createMemoryBus() });
    const guard = [];
    const write = [];
    for (const content of contents) {
      await sql.begin(async (tx) => {
        const current = await committer.lockCurrent(tx, tenantId);
        let t = performance.now();
        await committer.guard(tx, tenantId, current, content, 50, false);
        if (current) guard.push(performance.now() - t);
        t = performance.now();
        await committer.commit(
          tx,
          tenantId,
          current,
          {
            created_at: new Date(),
            created_by: "bench",
            reason: "ingest",
            rolled_back_from: null,
            digest: "sha256:bench",
            prefix_count_v4: content.v4.length,
            prefix_count_v6: content.v6.length,
            input_prefix_count: count(content),
            dropped_prefix_count: 0,
            modules: [],
            content,
          },
          (fn) => fn(),
        );
        if (current) write.push(performance.now() - t);
      });
    }
    const rows = await sql`SELECT revision_id, octet_length(content) AS bytes, parent_id FROM revisions WHERE tenant_id = ${tenantId} ORDER BY revision_id`;
    const bytes = rows.reduce((n, r) => n + r.bytes, 0);
    // Cold: a store with nothing decoded, as after a restart (the last revision walks the chain).
    const cold = async (fn) => {
      const times = [];
      for (let i = 0; i < 3; i++) {
        const s = createRevisionStore({ chain });
        const t = performance.now();
        await fn(s);
        times.push(performance.now() - t);
      }
      return median(times);
    };
    const readLast = await cold((s) => s.content(sql, tenantId, K));
    const readFirst = await cold((s) => s.content(sql, tenantId, 1));
    const diffCold = await cold((s) => diffRevisions(s, sql, tenantId, K - 1, K));
    const warmStore = createRevisionStore({ chain });
    await diffRevisions(warmStore, sql, tenantId, K - 1, K);
    const warm = [];
    for (let i = 0; i < 5; i++) {
      const t = performance.now();
      await diffRevisions(warmStore, sql, tenantId, K - 1, K);
      warm.push(performance.now() - t);
    }
    const farStore = createRevisionStore({ chain });
    await farStore.content(sql, tenantId, 1);
    await farStore.content(sql, tenantId, K);
    const far = [];
    for (let i = 0; i < 3; i++) {
      const t = performance.now();
      await diffRevisions(farStore, sql, tenantId, 1, K);
      far.push(performance.now() - t);
    }
    const d = await diffRevisions(warmStore, sql, tenantId, K - 1, K);
    runs[mode] = {
      guard: median(guard),
      write: median(write),
      bytes,
      lastBytes: rows.at(-1).bytes,
      readLast,
      readFirst,
      diffCold,
      diffWarm: median(warm),
      diffFar: median(far),
      parents: rows.map((r) => r.parent_id ?? "-").join(","),
      diff: `${d.added.length} added, ${d.removed.length} removed, ${d.changed.length} changed`,
    };
  }
  // As before: both whole lists walked, on the contents in memory (no read).
  const [a, b] = [contents[K - 2], contents[K - 1]];
  const before = { diff: [], guard: [] };
  for (let i = 0; i < 3; i++) {
    let t = performance.now();
    diffTagged(taggedPrefixes(a), taggedPrefixes(b));
    before.diff.push(performance.now() - t);
    t = performance.now();
    withdrawnCount(a, b);
    before.guard.push(performance.now() - t);
  }
  const w = runs.whole;
  const c = runs.change;
  const row = (name, x, y, fmt = ms) => console.log(`  ${name.padEnd(44)} ${fmt(x).padStart(10)} ${fmt(y).padStart(10)}   ${(y / x).toFixed(3)}×`);
  console.log(`${"".padEnd(46)}${"whole".padStart(10)} ${"change".padStart(10)}   change/whole`);
  row("guard (median of the chain's)", w.guard, c.guard);
  row("write (commit: encode + insert)", w.write, c.write);
  row("bytes stored, all revisions", w.bytes, c.bytes, mib);
  row("bytes stored, the last revision", w.lastBytes, c.lastBytes, mib);
  row(`cold read of the last (chain ${K - 1})`, w.readLast, c.readLast);
  row("cold read of the first (whole in both)", w.readFirst, c.readFirst);
  row("diff of the last and its parent, cold", w.diffCold, c.diffCold);
  row("diff of the last and its parent, warm", w.diffWarm, c.diffWarm);
  row(`diff of the first and the last, warm`, w.diffFar, c.diffFar);
  console.log(`  stored against: whole ${w.parents}; change ${c.parents}`);
  console.log(`  the diff: ${c.diff} (whole: ${w.diff})`);
  console.log(`before (in memory, the walk over both whole lists, median of 3):`);
  console.log(`  diff ${ms(median(before.diff))} → warm ${ms(c.diffWarm)} (${(median(before.diff) / c.diffWarm).toFixed(1)}× faster), cold ${ms(c.diffCold)}`);
  console.log(`  guard ${ms(median(before.guard))} → ${ms(c.guard)} (${(median(before.guard) / c.guard).toFixed(1)}× faster)`);
} finally {
  await sql.end({ timeout: 1 });
  await admin.unsafe(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.end({ timeout: 1 });
}
