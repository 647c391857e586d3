// The controller's event loop while a big prefix section's sealed body is written (1.2M prefixes,
// ~33 MB sealed): the body a refresh stores as its base's and a delta, written a few seconds after
// the commit (settleLater → writeBundleSectionBody), and a full section inserted whole in a
// transaction (store → insertBundleSection). Each way in one statement (as before migration
// 0028: the driver sends the bytea as hex text, encoded on the event loop) against in parts of
// BODY_PART_BYTES put together by one statement in the database, interleaved rounds. Printed:
// the longest stall of the event loop during the write (perf_hooks monitorEventLoopDelay max,
// and the worst lateness of a 10 ms interval timer), and the write's wall time. Asserts no time;
// checks the body stored is the one written.
//
//   npx turbo run build --output-logs=errors-only && node bench/section-body-write.mjs
//   BENCH_DB=embedded node bench/section-body-write.mjs     # PGlite in this process
//   BENCH_LINES=1200000 BENCH_ROUNDS=3 BENCH_PART_BYTES=1048576

import { randomBytes, randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import { encodePrefixColumns, sha256Hex } from "@rlc/shared/bundle";
import postgres from "postgres";
import { BODY_PART_BYTES, insertBundleSection, writeBundleSectionBody } from "../packages/controller/dist/db/bundle-sections.js";
import { openDatabase } from "../packages/controller/dist/db/connect.js";
import { migrate } from "../packages/controller/dist/db/migrate.js";
import { sealEnvelope } from "../packages/controller/dist/lib/sealed-envelope.js";
import { createSecretBox } from "../packages/controller/dist/lib/secret-box.js";

const LINES = Number(process.env.BENCH_LINES ?? 1_200_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const PART = Number(process.env.BENCH_PART_BYTES ?? BODY_PART_BYTES);
const EMBEDDED = process.env.BENCH_DB === "embedded";
const adminUrl = process.env.TEST_DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres";
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// A section as a tenant's modules tag 1.2M prefixes, sealed as the controller seals it.
const SETS = [["65000:100"], ["65000:100", "65000:2"], ["65000:300"], ["65000:1", "65010:7"], ["64512:1"]];
const prefixAt = (i) => `${10 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}.0/24`;
const plain = encodePrefixColumns(
  { length: LINES, prefixAt, communitiesAt: (i) => SETS[(i >> 6) % SETS.length] },
  { length: 0, prefixAt: () => "", communitiesAt: () => [] },
);
const box = createSecretBox(randomBytes(32));
const sealed = await sealEnvelope(box, plain);
const sha = sha256Hex(plain);

const dbName = `rlc_bench_body_${process.pid}`;
const dataDir = EMBEDDED ? await mkdtemp(join(tmpdir(), "rlc-bench-body-")) : "";
let dbUrl;
if (!EMBEDDED) {
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE DATABASE ${dbName}`);
  await admin.end();
  dbUrl = new URL(adminUrl);
  dbUrl.pathname = `/${dbName}`;
}
const database = await openDatabase({ url: dbUrl?.toString(), dataDir, applicationName: "bench" });
const sql = database.sql;

/** The longest stall of the event loop while `write` runs: the histogram's max and a 10 ms timer's worst lateness. */
async function stalls(write) {
  const h = monitorEventLoopDelay({ resolution: 10 });
  let last = performance.now();
  let late = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    late = Math.max(late, now - last - 10);
    last = now;
  }, 10);
  // The histogram's first tick after enable() or reset() records nothing: a stall at the write's
  // start would fall before it.
  h.enable();
  await new Promise((r) => setTimeout(r, 50));
  h.reset();
  await new Promise((r) => setTimeout(r, 25));
  // The timer's lateness counts from the write's start.
  last = performance.now();
  late = 0;
  const t = performance.now();
  await write();
  const wall = performance.now() - t;
  h.disable();
  clearInterval(timer);
  return { max: h.max / 1e6, late, wall };
}

try {
  await migrate(sql);
  const tenantId = randomUUID();
  await sql`INSERT INTO tenants (id, name, created_at) VALUES (${tenantId}, 'bench', now())`;
  let revision = 0;
  const newRevision = async () => {
    revision++;
    await sql`
      INSERT INTO revisions (tenant_id, revision_id, created_at, reason, digest, prefix_count_v4, prefix_count_v6, input_prefix_count, dropped_prefix_count, modules, content)
      VALUES (${tenantId}, ${revision}, now(), 'ingest', 'bench', ${LINES}, 0, ${LINES}, 0, '[]'::jsonb, ''::bytea)`;
    return revision;
  };
  const meta = (revisionId, made) => ({
    revision_id: revisionId,
    base_revision_id: 0,
    sha256: sha,
    prefixes_sha256: sha,
    base_prefixes_sha256: null,
    prefixes_pages_sha256: null,
    size: plain.length,
    chunk: 256 * 1024,
    made_from: made ? 1 : null,
    made_depth: made ? 1 : 0,
  });
  const stored = async (revisionId) => {
    const [{ ok }] =
      await sql`SELECT body = ${sealed} AS ok FROM bundle_sections WHERE tenant_id = ${tenantId} AND revision_id = ${revisionId} AND base_revision_id = 0`;
    if (!ok) throw new Error(`revision ${revisionId}: the stored body is not the one written`);
  };
  const ways = {
    "the body after the commit": async (partBytes) => {
      const id = await newRevision();
      await insertBundleSection(sql, tenantId, { ...meta(id, true), body: null });
      const r = await stalls(() => writeBundleSectionBody(sql, tenantId, id, sha, sealed, partBytes));
      await stored(id);
      return r;
    },
    "insert in a transaction": async (partBytes) => {
      const id = await newRevision();
      const r = await stalls(() => sql.begin((tx) => insertBundleSection(tx, tenantId, { ...meta(id, false), body: sealed }, partBytes)));
      await stored(id);
      return r;
    },
  };
  console.log(
    `${LINES.toLocaleString("en")} prefixes: section ${(plain.length / 2 ** 20).toFixed(1)} MiB, sealed ${(sealed.length / 2 ** 20).toFixed(1)} MiB; ${database.kind}; parts of ${(PART / 2 ** 20).toFixed(2)} MiB; ${ROUNDS} interleaved rounds, medians (worst)`,
  );
  for (const [name, write] of Object.entries(ways)) {
    const runs = { whole: [], parts: [] };
    for (let r = 0; r < ROUNDS; r++)
      for (const side of r % 2 ? ["parts", "whole"] : ["whole", "parts"]) runs[side].push(await write(side === "whole" ? Number.POSITIVE_INFINITY : PART));
    const f = (xs, k) => `${median(xs.map((x) => x[k])).toFixed(0)} (${Math.max(...xs.map((x) => x[k])).toFixed(0)}) ms`;
    for (const side of ["whole", "parts"])
      console.log(
        `  ${name.padEnd(26)} ${(side === "whole" ? "one statement" : "in parts").padEnd(13)}  loop delay max ${f(runs[side], "max")}, 10 ms timer late ${f(runs[side], "late")}, write ${f(runs[side], "wall")}`,
      );
  }
} finally {
  await database.close();
  if (EMBEDDED) await rm(dataDir, { recursive: true, force: true });
  else {
    const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
    await admin.unsafe(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    await admin.end();
  }
}
