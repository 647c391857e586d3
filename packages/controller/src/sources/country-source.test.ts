// Delegated statistics written here in the registries' own format (version line, summary lines,
// comments, records of every status, the extended form's extra column); RIPEstat's country
// resource list answered by a local HTTP server.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseCidrValue } from "@rlc/shared/prefix";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countToCidrs, parseDelegated } from "./country-parse.js";
import { createCountrySource } from "./country-source.js";
import { createOutboundClient } from "./outbound.js";

const RIPE = `2|ripencc|1732665600|9|19830705|20261126|+0100
ripencc|*|asn|*|1|summary
ripencc|*|ipv4|*|5|summary
ripencc|*|ipv6|*|2|summary
# a comment line
ripencc|NL|asn|1101|1|19930901|allocated
ripencc|NL|ipv4|193.0.0.0|2048|19930901|allocated
ripencc|NL|ipv4|193.0.8.0|768|19930901|assigned
ripencc|NL|ipv6|2001:67c:2e8::|48|20040101|assigned
ripencc|DE|ipv4|194.0.0.0|256|19930901|allocated
ripencc|ZZ|ipv4|195.0.0.0|1024||reserved
ripencc||ipv4|196.0.0.0|1024||available
ripencc|NL|ipv6|2a00:1::|32|20100101|allocated
`;
const ARIN = `2.3|arin|1732665601|3|19700101|20261126|-0500
arin|*|ipv4|*|2|summary
arin|*|ipv6|*|1|summary
arin|US|ipv4|3.0.0.0|4194304|19880223|allocated|e5e3b9c13678dfc483fb1f819d70883c
arin|NL|ipv4|23.128.0.0|1000|20190101|assigned|0a1b2c
arin|ZZ|ipv6|2620:1::|32||reserved|
`;
/** NL's records above as CIDRs: RIPE's 2048 and 768 addresses and its IPv6 ones; ARIN's 1000 addresses (not a power of two). */
const RIPE_NL_V4 = ["193.0.0.0/21", "193.0.8.0/23", "193.0.10.0/24"];
const RIPE_NL_V6 = ["2001:67c:2e8::/48", "2a00:1::/32"];
const ARIN_NL = ["23.128.0.0/23", "23.128.2.0/24", "23.128.3.0/25", "23.128.3.128/26", "23.128.3.192/27", "23.128.3.224/29"];
const HEADERS_ONLY = [
  "2|afrinic|20261126|1|00000000|20261126|+0000\nafrinic|ZA|ipv4|41.0.0.0|65536|20071128|allocated\n",
  "2|apnic|20261126|1|19830613|20261125|+1000\napnic|JP|ipv4|1.0.16.0|4096|20110412|allocated\n",
  "2|lacnic|20261126|1|19870101|20261126|-0300\nlacnic|BR|ipv6|2801:80::|32|20100101|allocated\n",
];

describe("parseDelegated", () => {
  it("reads allocated and assigned records of all five registries, skipping version, summary, comment, asn, reserved and available lines", () => {
    const index = new Map<string, string[]>();
    for (const text of [RIPE, ARIN, ...HEADERS_ONLY]) expect(parseDelegated(text, index).rejected).toBe(0);
    expect(index.get("NL")).toEqual([...RIPE_NL_V4, ...RIPE_NL_V6, ...ARIN_NL]);
    expect(index.get("DE")).toEqual(["194.0.0.0/24"]);
    expect(index.get("US")).toEqual(["3.0.0.0/10"]);
    expect(index.get("ZA")).toEqual(["41.0.0.0/16"]);
    expect(index.get("JP")).toEqual(["1.0.16.0/20"]);
    expect(index.get("BR")).toEqual(["2801:80::/32"]);
    expect(index.has("ZZ")).toBe(false);
  });

  it("counts a record it cannot read (a range past 255.255.255.255, a bad prefix length) as rejected", () => {
    const stats = parseDelegated("ripencc|NL|ipv4|255.255.255.0|512|20000101|allocated\nripencc|NL|ipv6|2001:db8::|129|20000101|allocated\n", new Map());
    expect(stats).toMatchObject({ records: 0, rejected: 2 });
  });
});

describe("countToCidrs", () => {
  it("the CIDRs of a count cover exactly that range, in order, as few as can be", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: 1, max: 1 << 24 }), (start, count) => {
        fc.pre(start + count - 1 <= 0xffffffff);
        const text = [start >>> 24, (start >>> 16) & 255, (start >>> 8) & 255, start & 255].join(".");
        const cidrs = countToCidrs(text, count)!;
        let next = BigInt(start);
        for (const c of cidrs) {
          const parsed = parseCidrValue(c);
          if (!parsed.ok) throw new Error(c);
          expect(parsed.cidr.network).toBe(next);
          next += 1n << BigInt(32 - parsed.cidr.length);
        }
        expect(next).toBe(BigInt(start) + BigInt(count));
        // Fewest: no two neighbours are siblings that would make their parent.
        for (let i = 1; i < cidrs.length; i++) {
          const a = parseCidrValue(cidrs[i - 1]!);
          const b = parseCidrValue(cidrs[i]!);
          if (!a.ok || !b.ok) throw new Error("unparsed");
          const aligned = a.cidr.length === b.cidr.length && a.cidr.network >> BigInt(33 - a.cidr.length) === b.cidr.network >> BigInt(33 - b.cidr.length);
          expect(aligned).toBe(false);
        }
      }),
      { numRuns: 500 },
    );
  });

  it("refuses a range that leaves IPv4", () => {
    expect(countToCidrs("255.255.255.255", 2)).toBeNull();
    expect(countToCidrs("2001:db8::", 2)).toBeNull();
  });
});

describe("createCountrySource", () => {
  let dir: string;
  let server: Server;
  let base: string;
  let served: Record<string, unknown> = {};
  const client = createOutboundClient({ allowCidrs: ["127.0.0.0/8"], timeoutMs: 5_000 });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "rlc-country-"));
    server = createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://x");
      if (url.pathname === "/stats/arin.txt") {
        res.end(ARIN);
        return;
      }
      const doc = url.pathname === "/data/country-resource-list/data.json" ? served[url.searchParams.get("resource") ?? ""] : undefined;
      res.writeHead(doc ? 200 : 404, { "content-type": "application/json" });
      res.end(JSON.stringify(doc ?? { status: "error" }));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
    await new Promise((resolve) => server.close(resolve));
    await client.close();
  });

  it("delegated: merges a file per registry, by path and by URL, into the fewest CIDRs of each country", async () => {
    await writeFile(join(dir, "ripe.txt"), RIPE);
    const source = createCountrySource(`delegated:${join(dir, "ripe.txt")},${base}/stats/arin.txt`, { client });
    // 193.0.0.0/21 + 193.0.8.0/23 + 193.0.10.0/24 stay three; ARIN's 1000 addresses add six.
    expect(await source.prefixesOf("NL")).toEqual([...ARIN_NL, ...RIPE_NL_V4, ...RIPE_NL_V6]);
    expect(await source.prefixesOf("FR")).toEqual([]);
  });

  it("delegated: a missing file or one with no address records is an error naming it", async () => {
    await expect(createCountrySource(`delegated:${join(dir, "absent.txt")}`).prefixesOf("NL")).rejects.toThrow(
      /cannot read delegated statistics .*absent\.txt/,
    );
    await writeFile(join(dir, "junk.txt"), "<html>not found</html>\n");
    await expect(createCountrySource(`delegated:${join(dir, "junk.txt")}`).prefixesOf("NL")).rejects.toThrow(/no allocated or assigned address records/);
  });

  it("ripestat: reads the country resource list, IPv4 ranges and CIDRs, IPv6 CIDRs", async () => {
    served = {
      NL: {
        status: "ok",
        data: { resource: "nl", resources: { asn: ["1101"], ipv4: ["193.0.0.0-193.0.10.255", "45.0.0.0/24"], ipv6: ["2001:67c:2e8::/48"] } },
      },
      XX: { status: "ok", data: { resource: "DE", resources: { ipv4: [], ipv6: [] } } },
    };
    const source = createCountrySource("ripestat", { client, baseUrl: base });
    expect(await source.prefixesOf("NL")).toEqual(["45.0.0.0/24", "193.0.0.0/21", "193.0.8.0/23", "193.0.10.0/24", "2001:67c:2e8::/48"]);
    await expect(source.prefixesOf("XX")).rejects.toThrow(/answered for DE, not XX/);
    await expect(source.prefixesOf("DE")).rejects.toThrow(/404/);
  });

  it("refuses a spec it does not know", () => {
    expect(() => createCountrySource("file:/x")).toThrow(/ripestat.*delegated/);
  });
});
