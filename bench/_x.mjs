import { readFileSync } from "node:fs";
import { hash, createHash } from "node:crypto";
const txt = readFileSync("node_modules/@ip-location-db/asn/asn-ipv4.csv", "utf8").split("\n");
const k12 = new Set(), k16 = new Set();
for (const l of txt) { const a = l.split(",")[0]; if (!a) continue; const p = a.split(".").map(Number); const v = ((p[0] << 24) | (p[1] << 16)) >>> 0; k12.add(v >>> 20); k16.add(v >>> 16); }
console.log("v4 rows", txt.length, "keys12", k12.size, "keys16", k16.size);
const t6 = readFileSync("node_modules/@ip-location-db/asn/asn-ipv6.csv", "utf8").split("\n");
const s16 = new Set(), s24 = new Set(), s32 = new Set();
for (const l of t6) { const a = l.split(",")[0]; if (!a) continue; const g = a.split(":"); const w0 = parseInt(g[0] || "0", 16), w1 = parseInt(g[1] || "0", 16); s16.add(w0); s24.add(w0 * 256 + (w1 >> 8)); s32.add(w0 * 65536 + w1); }
console.log("v6 rows", t6.length, "k16", s16.size, "k24", s24.size, "k32", s32.size);
const buf = Buffer.alloc(34e6, 97);
for (const size of [1000, 8000, 34e6]) {
  const n = Math.floor(34e6 / size); let t = performance.now();
  for (let r = 0; r < 3; r++) { t = performance.now(); for (let i = 0; i < n; i++) hash("sha256", buf.subarray(i * size, (i + 1) * size), "buffer"); }
  const a = performance.now() - t; t = performance.now();
  for (let i = 0; i < n; i++) createHash("sha256").update(buf.subarray(i * size, (i + 1) * size)).digest();
  console.log(size, n, "hash()", a.toFixed(1), "createHash", (performance.now() - t).toFixed(1));
}
