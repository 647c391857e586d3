// The bundle's own cost, rl-bundle/1 beside rl-bundle/2, on the same content in this process:
// issue (payload, digest, sign) and verify, for a full bundle of BENCH_BUNDLE_PREFIXES (default
// 491,355, as bench/apply.mjs) and a delta of a 1 % change; sizes; then the delta's build on the
// controller and its rebuild on the agent, step by step. The prefixes are in a revision's order
// (IPv4 first, by address), as the controller's revisions are. Medians of BENCH_RUNS (3) runs,
// the compared things interleaved so that load from other processes falls on all of them.
// BENCH_BASELINE=<another build's packages/shared/dist/bundle/index.js> adds that build's delta
// steps beside this one's (the before of a change). Asserts no time.
//
//   npx turbo run build && node bench/bundle-format.mjs
import { resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import {
  applyPrefixDeltaBytes,
  buildBundlePayload,
  columnOf,
  configBytes,
  contentDigestV2,
  diffPrefixColumns,
  encodePrefixColumns,
  sha256Hex,
  signBundle,
  signBundleHead,
  signingKeyFromSeed,
  verifyBundle,
} from "@rlc/shared/bundle";
import { xorshift } from "./random.mjs";

const N = Number(process.env.BENCH_BUNDLE_PREFIXES || 491_355);
const RUNS = Number(process.env.BENCH_RUNS || 3);
const rnd = xorshift(7);
const a = ["65000:100"];
const b = ["65000:200"];
// Random /24s in 11-99.x.x and /48s in 2a00-2a09, each family sorted by address (a revision's order).
const v4set = new Set();
while (v4set.size < Math.round(N * 0.9)) v4set.add((11 + Math.floor(rnd() * 89)) * 65536 + Math.floor(rnd() * 65536));
const v6set = new Set();
while (v6set.size < N - v4set.size) v6set.add(Math.floor(rnd() * 10) * 65536 + Math.floor(rnd() * 65536));
const byNumber = (x, y) => x - y;
const v4 = [...v4set].sort(byNumber).map((n, i) => [`${n >>> 16}.${(n >>> 8) & 255}.${n & 255}.0/24`, i % 2 ? a : b]);
const v6 = [...v6set].sort(byNumber).map((n) => [`2a0${n >>> 16}:${(n & 65535).toString(16)}::/48`, b]);
const TENANT = "0192f3a4-0000-7000-8000-000000000001";
const SPEAKER = "0192f3a4-0000-7000-8000-0000000000aa";
const config = (revision) => ({
  tenant_id: TENANT,
  speaker_id: SPEAKER,
  revision_id: revision,
  speaker: { router_id: "127.0.0.1", asn: 65000, policies_json: {} },
  bird: {},
  communities: [],
  peers: [],
});
const base = { v4, v6 };
// 1 %: every 300th prefix dropped, every 300th (offset 1) re-tagged, as many added at the end of IPv4.
const next = { v4: v4.filter((_, i) => i % 300 !== 0).map((e, i) => (i % 300 === 1 ? [e[0], ["65000:300"]] : e)), v6 };
for (let i = 0; i < Math.round(N / 300); i++) next.v4.push([`${100 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}.0/24`, a]);
const columns = (p) => ({ v4: columnOf(p.v4), v6: columnOf(p.v6) });
const encode = (p) => encodePrefixColumns(columnOf(p.v4), columnOf(p.v6));

const key = await signingKeyFromSeed(new Uint8Array(32).fill(9));
const pinned = [{ key_id: key.keyId, alg: "ed25519", public_key: Buffer.from(key.publicKey).toString("base64"), status: "active" }];
const opts = { speakerId: SPEAKER, tenantId: TENANT, lastSequence: null, now: Date.now() };
const time = async (fn) => {
  const t = performance.now();
  const out = await fn();
  return [performance.now() - t, out];
};
async function v2(prefixes, baseOf) {
  const full = encode(prefixes);
  const prefixesSha = sha256Hex(full);
  const section = baseOf ? diffPrefixColumns(columns(baseOf), columns(prefixes)) : full;
  const c = config(2);
  const now = new Date();
  const head = await signBundleHead(
    {
      ...{
        tenant_id: TENANT,
        speaker_id: SPEAKER,
        revision_id: 2,
        sequence: 2,
        issued_at: now.toISOString(),
        expires_at: new Date(now.getTime() + 3.6e6).toISOString(),
      },
      digest: contentDigestV2(c, prefixesSha),
      prefixes_sha256: prefixesSha,
      section: baseOf ? "delta" : "full",
      section_sha256: sha256Hex(section),
      section_size: section.length,
      ...(baseOf ? { base_revision_id: 1, base_prefixes_sha256: sha256Hex(encode(baseOf)) } : {}),
    },
    configBytes(c),
    key,
  );
  return Buffer.concat([head, section]);
}
const baseSection = encode(base);
const rows = { sign1: [], verify1: [], sign2: [], verify2: [], delta2: [], verifyDelta2: [] };
let sizes = {};
for (let r = 0; r < RUNS; r++) {
  const [s1, env1] = await time(async () =>
    Buffer.from(
      JSON.stringify(await signBundle(buildBundlePayload({ ...config(2), prefixes: next }, { sequence: 2, issuedAt: new Date() }), key.secretKey, key.keyId)),
    ),
  );
  const [v1] = await time(() => verifyBundle(env1, pinned, opts));
  const [s2, env2] = await time(() => v2(next));
  const [v2t] = await time(() => verifyBundle(env2, pinned, opts));
  const [d2, delta] = await time(() => v2(next, base));
  const [vd] = await time(() => verifyBundle(delta, pinned, { ...opts, base: { revision_id: 1, section: baseSection } }));
  for (const [k, v] of Object.entries({ sign1: s1, verify1: v1, sign2: s2, verify2: v2t, delta2: d2, verifyDelta2: vd })) rows[k].push(v);
  sizes = { v1: env1.length, v2: env2.length, delta: delta.length };
}
const med = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
const s = (ms) => `${(ms / 1000).toFixed(2)} s`.padStart(8);
const mib = (n) => `${(n / 2 ** 20).toFixed(1)} MiB`;
console.log(`bundle of ${(next.v4.length + next.v6.length).toLocaleString()} prefixes, medians of ${RUNS} runs (interleaved)`);
console.log(
  `  size          rl-bundle/1 ${mib(sizes.v1)}   rl-bundle/2 full ${mib(sizes.v2)}   delta of a 1 % change ${(sizes.delta / 1024).toFixed(0)} KiB (1/${Math.round(sizes.v2 / sizes.delta)} of full)`,
);
console.log(
  `  issue         rl-bundle/1 ${s(med(rows.sign1))}   rl-bundle/2 full ${s(med(rows.sign2))} (once per revision; per further speaker: one header)   delta ${s(med(rows.delta2))}`,
);
console.log(
  `  verify        rl-bundle/1 ${s(med(rows.verify1))}   rl-bundle/2 full ${s(med(rows.verify2))}   delta (rebuild + hash) ${s(med(rows.verifyDelta2))}`,
);

// The delta's steps. This build: the controller writes the revision's section from its columns
// and hashes it (once per revision, when a refresh makes it), and walks the two revisions for the
// script; the agent copies byte runs of the base it keeps and hashes the result. A baseline build
// (BENCH_BASELINE) runs its own functions on the same content, interleaved with these.
const baseline = process.env.BENCH_BASELINE ? await import(pathToFileURL(resolve(process.env.BENCH_BASELINE)).href) : null;
const step = (label, fn, into) => {
  const t = performance.now();
  const out = fn();
  (into[label] ??= []).push(performance.now() - t);
  return out;
};
const now = {};
const before = {};
const same = (x, y, what) => {
  if (!x.equals(y)) throw new Error(`${what}: the two builds' bytes differ`);
};
for (let r = 0; r < RUNS; r++) {
  const runNew = () => {
    const full = step(
      "full section (write + hash)",
      () => {
        const bytes = encode(next);
        sha256Hex(bytes);
        return bytes;
      },
      now,
    );
    const delta = step("delta script", () => diffPrefixColumns(columns(base), columns(next)), now);
    const rebuilt = step(
      "agent: rebuild + hash",
      () => {
        const bytes = applyPrefixDeltaBytes(baseSection, delta);
        sha256Hex(bytes);
        return bytes;
      },
      now,
    );
    same(rebuilt, full, "rebuilt section");
    return full;
  };
  const runBefore = () => {
    const B = baseline;
    const lines = (p) => B.prefixLines(B.columnOf(p.v4), B.columnOf(p.v6));
    const baseLines = step("lines of the base", () => lines(base), before);
    const nextLines = step("lines of the next", () => lines(next), before);
    const full = step(
      "full section (write + hash)",
      () => {
        const bytes = B.encodePrefixLines(nextLines);
        B.sha256Hex(bytes);
        return bytes;
      },
      before,
    );
    const delta = step("delta script", () => B.diffPrefixLines(baseLines, nextLines), before);
    const rebuilt = step(
      "agent: rebuild + hash",
      () => {
        const bytes = B.encodePrefixLines(B.applyPrefixDelta(B.splitSection(baseSection), delta));
        B.sha256Hex(bytes);
        return bytes;
      },
      before,
    );
    same(rebuilt, full, "baseline's rebuilt section");
    return full;
  };
  if (!baseline) runNew();
  else if (r % 2) same(runBefore(), runNew(), "full section");
  else same(runNew(), runBefore(), "full section");
}
const ms = (xs) => (xs ? `${med(xs).toFixed(0)} ms` : "-").padStart(8);
const controllerNow = med(now["full section (write + hash)"]) + med(now["delta script"]);
console.log(`delta of a 1 % change, step by step (medians of ${RUNS})${baseline ? "      baseline   this build" : ""}`);
for (const label of ["lines of the base", "lines of the next", "full section (write + hash)", "delta script", "agent: rebuild + hash"]) {
  if (!now[label] && !baseline) continue;
  console.log(`  ${label.padEnd(30)}${baseline ? ms(before[label]) : ""}   ${ms(now[label])}`);
}
const controllerBefore = baseline
  ? ["lines of the base", "lines of the next", "full section (write + hash)", "delta script"].reduce((t, l) => t + med(before[l]), 0)
  : null;
console.log(
  `  controller, section + delta   ${baseline ? `${controllerBefore.toFixed(0).padStart(5)} ms` : ""}   ${controllerNow.toFixed(0).padStart(5)} ms (the section is built when the refresh makes the revision; an apply then only reads it)`,
);
