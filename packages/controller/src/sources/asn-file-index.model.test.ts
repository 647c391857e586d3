// loadAsnFileIndex against the load as it was before rows were read in place and IPv4 ranges
// kept in typed columns: node:readline's lines, each trimmed and read by parseRow, ranges pushed
// per ASN, CIDRs made by appendRangeCidrValues and canonicalCidrs. Same stats, same prefixes for
// every ASN, same refusal, for any mix of rows; and the same on the real @ip-location-db tables.
import { createReadStream } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { Readable } from "node:stream";
import { appendRangeCidrValues, type CidrValue } from "@rlc/shared/prefix";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { canonicalCidrs, loadAsnFileIndex, parseRow } from "./asn-file-index.js";
import { eachLine } from "./text-lines.js";

interface ModelIndex {
  stats: { rows: number; rejected: number; asns: number };
  prefixesOf(asn: number): string[];
  asnList: number[];
}

/** The model: loadAsnFileIndex as written before (null where it threw: no rows). */
async function modelIndex(paths: string[]): Promise<ModelIndex | null> {
  const v4 = new Map<number, number[]>();
  const v6 = new Map<number, bigint[]>();
  const push = <T>(map: Map<number, T[]>, asn: number, start: T, end: T) => {
    const list = map.get(asn);
    if (list) list.push(start, end);
    else map.set(asn, [start, end]);
  };
  let rows = 0;
  let rejected = 0;
  for (const path of paths) {
    const stream = createReadStream(path, { encoding: "utf8", highWaterMark: 1 << 20 });
    for await (const line of createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY })) {
      const text = line.trim();
      if (text === "" || text.startsWith("#")) continue;
      const row = parseRow(text);
      if (row === null) {
        rejected++;
        continue;
      }
      rows++;
      for (const asn of row.asns) {
        if (row.family === 4) push(v4, asn, row.start as number, row.end as number);
        else push(v6, asn, row.start as bigint, row.end as bigint);
      }
    }
  }
  if (rows === 0) return null;
  const asnList = [...new Set([...v4.keys(), ...v6.keys()])];
  return {
    stats: { rows, rejected, asns: asnList.length },
    asnList,
    prefixesOf(asn) {
      const cidrs: CidrValue[] = [];
      const ranges4 = v4.get(asn) ?? [];
      for (let i = 0; i < ranges4.length; i += 2) appendRangeCidrValues(4, BigInt(ranges4[i]!), BigInt(ranges4[i + 1]!), cidrs);
      const ranges6 = v6.get(asn) ?? [];
      for (let i = 0; i < ranges6.length; i += 2) appendRangeCidrValues(6, ranges6[i]!, ranges6[i + 1]!, cidrs);
      return canonicalCidrs(cidrs);
    },
  };
}

/** Loads `paths` both ways and compares stats and every ASN's prefixes (and ASN 0, and one absent). */
async function expectSameIndex(paths: string[], every = 1) {
  const model = await modelIndex(paths);
  if (model === null) {
    await expect(loadAsnFileIndex(paths)).rejects.toMatchObject({ code: "asn_source_malformed" });
    return;
  }
  const index = await loadAsnFileIndex(paths);
  expect(index.stats).toEqual(model.stats);
  const asns = [0, 7, ...model.asnList.filter((_, i) => i % every === 0)];
  for (const asn of asns) expect(index.prefixesOf(asn), `AS${asn}`).toEqual(model.prefixesOf(asn));
}

// Small values, so that ranges of one ASN overlap, repeat and touch.
const octet = fc.oneof(fc.constantFrom(0, 1, 2, 10, 127, 128, 255), fc.integer({ min: 0, max: 255 }));
const quad = fc.tuple(octet, octet, octet, octet).map((o) => o.join("."));
const oddQuad = fc.oneof(
  quad.map((q) => q.replace(/^(\d+)/, "0$1")),
  fc.constantFrom("256.0.0.0", "1.2.3", "1.2.3.4.5", "1..2.3", " 1.2.3.4", "1.2.3.4 "),
);
const decimal = fc.oneof(fc.integer({ min: 0, max: 0xffffffff }).map(String), fc.constantFrom("00000000001", "4294967296", "0001", "18446744073709551616"));
const v6 = fc.constantFrom("2001:db8::", "2001:db8::ff", "2001:db8:0:1::", "2606:4700::", "2606:4700:ffff::", "::", "::ffff:1.2.3.4", "2001:DB8::1");
const asn = fc.oneof(
  { weight: 5, arbitrary: fc.constantFrom("13335", "64500", "64501", "0", "1", "4294967295") },
  { weight: 1, arbitrary: fc.constantFrom("4294967296", "00064500", "12345678901", "64500_64501", "AS64500", "", " 64500", "64500 ", '"64500"') },
);
const tail = fc.constantFrom("", "", ",Cloudflare", ',"Cloudflare, Inc."', ",", ", x");
const row = fc.oneof(
  { weight: 6, arbitrary: fc.tuple(quad, quad, asn, tail).map(([a, b, n, t]) => `${a},${b},${n}${t}`) },
  { weight: 2, arbitrary: fc.tuple(fc.oneof(quad, oddQuad), fc.oneof(quad, oddQuad, decimal), asn, tail).map(([a, b, n, t]) => `${a},${b},${n}${t}`) },
  { weight: 2, arbitrary: fc.tuple(decimal, decimal, asn, tail).map(([a, b, n, t]) => `${a},${b},${n}${t}`) },
  { weight: 2, arbitrary: fc.tuple(v6, v6, asn, tail).map(([a, b, n, t]) => `${a},${b},${n}${t}`) },
  { weight: 1, arbitrary: fc.tuple(quad, fc.integer({ min: 0, max: 40 }), asn).map(([a, len, n]) => `${a}\t${len}\t${n}`) },
  { weight: 1, arbitrary: fc.tuple(quad, quad, asn).map(([a, b, n]) => `${a}\t${b}\t${n}`) },
  { weight: 1, arbitrary: fc.tuple(quad, quad, asn).map(([a, b, n]) => `"${a}","${b}",${n}`) },
  { weight: 1, arbitrary: fc.constantFrom("", "  ", "# comment", "range_start,range_end,asn", "\ufeff", "1.0.0.0,1.0.0.255", "garbage") },
);
const eol = fc.constantFrom("\n", "\n", "\r\n", "\r");
const file = fc
  .tuple(fc.array(fc.tuple(row, eol), { maxLength: 40 }), fc.boolean(), fc.boolean())
  .map(([lines, bom, last]) => (bom ? "\ufeff" : "") + lines.map(([l, e], i) => l + (i < lines.length - 1 || last ? e : "")).join(""));

describe("loadAsnFileIndex against the model", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "rlc-asn-model-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("gives the model's stats and prefixes for any mix of rows, over one file or two", async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(file, file, fc.boolean(), async (a, b, two) => {
        const pa = join(dir, `a${n}.csv`);
        const pb = join(dir, `b${n++}.csv`);
        await writeFile(pa, a);
        await writeFile(pb, b);
        await expectSameIndex(two ? [pa, pb] : [pa]);
      }),
      { numRuns: 400 },
    );
  });

  it("gives the model's stats and prefixes for the @ip-location-db/asn tables (address and -num forms)", async () => {
    const pkg = dirname(createRequire(import.meta.url).resolve("@ip-location-db/asn/package.json"));
    await expectSameIndex([join(pkg, "asn-ipv4.csv"), join(pkg, "asn-ipv6.csv")], 37);
    await expectSameIndex([join(pkg, "asn-ipv4-num.csv")], 41);
  }, 120_000);
});

describe("eachLine against node:readline", () => {
  /** The lines readline gives for `chunks`. */
  const readlineLines = async (chunks: string[]) => {
    const out: string[] = [];
    for await (const line of createInterface({ input: Readable.from(chunks), crlfDelay: Number.POSITIVE_INFINITY })) out.push(line);
    return out;
  };

  it("gives readline's lines for any text cut into any chunks", async () => {
    const text = fc.string({ unit: fc.constantFrom("a", "b", ",", " ", "\r", "\n", "\r\n"), maxLength: 60 });
    await fc.assert(
      fc.asyncProperty(text, fc.array(fc.nat(), { maxLength: 6 }), async (t, cuts) => {
        const points = [...new Set(cuts.map((c) => c % (t.length + 1)))].sort((x, y) => x - y);
        const chunks = [0, ...points].map((p, i, all) => t.slice(p, all[i + 1] ?? t.length)).filter((c) => c !== "");
        const lines: string[] = [];
        await eachLine(Readable.from(chunks), (s, start, end) => lines.push(s.slice(start, end)));
        expect(lines).toEqual(await readlineLines(chunks));
      }),
      { numRuns: 2000 },
    );
  });
});
