// Fixtures (hand-written): asn-ranges.csv holds ip-location-db / iptoasn rows for IPv4 and IPv6,
// some not CIDR-aligned, plus a header, an ASN 0 row, a reversed range and garbage;
// asn-ranges-num.csv the same ranges in the `-num` decimal form; asn-pfx2as.tsv CAIDA rows with
// `a_b` and `a,b` origins and host bits set, an iptoasn .tsv row and a bad prefix length.
import { copyFile, mkdtemp, rm, unlink, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadAsnFileIndex } from "./asn-file-index.js";
import { AsnSourceError, createAsnSource } from "./asn-source.js";
import { createOutboundClient } from "./outbound.js";

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
/** The fewest CIDRs of AS64500's unaligned ranges, listed in both forms of asn-ranges. */
const AS64500_RANGES_V4 = ["1.1.1.1/32", "1.1.1.2/31", "1.1.1.4/30", "1.1.1.8/31", "1.1.1.10/32"];
const AS64500_RANGES_V6 = ["2a00:1::/127", "2a00:1::2/128"];

describe("createAsnSource - file", () => {
  it("announcedPrefixes - splits ranges that are not CIDR-aligned into their fewest CIDRs", async () => {
    const source = createAsnSource(`file:${fixture("asn-ranges.csv")}`);
    expect(await source.announcedPrefixes(64500)).toEqual([...AS64500_RANGES_V4, "5.0.0.0/23", "5.0.2.0/24", ...AS64500_RANGES_V6]);
    expect(await source.announcedPrefixes(13335)).toEqual(["1.0.0.0/24", "2606:4700::/32"]);
    expect(await source.announcedPrefixes(64501)).toEqual(["0.0.0.0/0"]);
    expect(await source.announcedPrefixes(64502)).toEqual([]);
    expect(await source.announcedPrefixes(65535)).toEqual([]);
    await source.close();
  });

  it("loadAsnFileIndex - counts the header, reversed, mixed and garbage lines as rejected; ASN 0 is no ASN", async () => {
    const index = await loadAsnFileIndex([fixture("asn-ranges.csv")]);
    expect(index.stats).toEqual({ rows: 7, rejected: 4, asns: 3 });
    expect(index.prefixesOf(0)).toEqual([]);
  });

  it("announcedPrefixes - reads the decimal -num form the same as the address form", async () => {
    const source = createAsnSource(`file:${fixture("asn-ranges-num.csv")}`);
    expect(await source.announcedPrefixes(64500)).toEqual([...AS64500_RANGES_V4, ...AS64500_RANGES_V6]);
    expect(await source.announcedPrefixes(13335)).toEqual(["1.0.0.0/24", "2606:4700::/32"]);
  });

  it("announcedPrefixes - lists pfx2as multi-origin and AS-set prefixes under each ASN, masking host bits", async () => {
    const source = createAsnSource(`file:${fixture("asn-pfx2as.tsv")}`);
    expect(await source.announcedPrefixes(15169)).toEqual(["8.8.4.0/24", "8.8.8.0/24", "2001:4860::/32"]);
    expect(await source.announcedPrefixes(36040)).toEqual(["8.8.4.0/24"]);
    expect(await source.announcedPrefixes(64510)).toEqual(["6.0.112.0/23"]);
    expect(await source.announcedPrefixes(64511)).toEqual(["6.0.112.0/23"]);
    expect(await source.announcedPrefixes(64512)).toEqual(["10.0.0.0/8"]);
    expect(await source.announcedPrefixes(64503)).toEqual(["1.2.3.0/25"]);
    expect(await source.announcedPrefixes(38803)).toEqual(["1.0.4.0/22"]);
  });

  it("announcedPrefixes - reads several comma-separated files into one index", async () => {
    const source = createAsnSource(`file:${fixture("asn-ranges.csv")},${fixture("asn-pfx2as.tsv")}`);
    expect(await source.announcedPrefixes(13335)).toEqual(["1.0.0.0/24", "2606:4700::/32"]);
    expect(await source.announcedPrefixes(15169)).toHaveLength(3);
  });

  it("announcedPrefixes - loads the file once and shares it between calls", async () => {
    const dir = await mkdtemp(join(tmpdir(), "asn-"));
    const path = join(dir, "table.csv");
    try {
      await copyFile(fixture("asn-ranges.csv"), path);
      const source = createAsnSource(`file:${path}`);
      const [first, second] = await Promise.all([source.announcedPrefixes(13335), source.announcedPrefixes(64500)]);
      expect(first).toHaveLength(2);
      expect(second).toHaveLength(9);
      await unlink(path);
      expect(await source.announcedPrefixes(13335)).toEqual(first);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("announcedPrefixes - a missing file fails with asn_file_unreadable and is tried again on the next call", async () => {
    const dir = await mkdtemp(join(tmpdir(), "asn-"));
    const path = join(dir, "later.csv");
    try {
      const source = createAsnSource(`file:${path}`);
      await expect(source.announcedPrefixes(13335)).rejects.toMatchObject({ name: "AsnSourceError", code: "asn_file_unreadable" });
      await writeFile(path, "1.0.0.0,1.0.0.255,13335,x\n");
      expect(await source.announcedPrefixes(13335)).toEqual(["1.0.0.0/24"]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("announcedPrefixes - a file without a single row is asn_source_malformed", async () => {
    const dir = await mkdtemp(join(tmpdir(), "asn-"));
    try {
      await writeFile(join(dir, "bad.csv"), "asn,name\nnot,a,table\n");
      const source = createAsnSource(`file:${join(dir, "bad.csv")}`);
      await expect(source.announcedPrefixes(1)).rejects.toMatchObject({ code: "asn_source_malformed", message: /bad\.csv:1/ });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("createAsnSource - refuses an unknown spec", () => {
    expect(() => createAsnSource("whois")).toThrow(AsnSourceError);
    expect(() => createAsnSource("file:")).toThrow(/empty file path/);
  });

  it("announcedPrefixes - the @ip-location-db/asn IPv4 table is read once into an index that answers every later ASN", async () => {
    // A copy of the real table (~412k ranges), removed after the first answer: the second ASN is
    // answered from the index in memory, not by reading the file again. (How fast it loads is
    // bench/'s business, not a test's.)
    const pkg = createRequire(import.meta.url).resolve("@ip-location-db/asn/package.json");
    const dir = await mkdtemp(join(tmpdir(), "rlc-asn-"));
    const copy = join(dir, "asn-ipv4.csv");
    await copyFile(join(dirname(pkg), "asn-ipv4.csv"), copy);
    try {
      const source = createAsnSource(`file:${copy}`);
      const prefixes = await source.announcedPrefixes(13335);
      expect(prefixes).toContain("1.1.1.0/24");
      expect(prefixes.length).toBeGreaterThan(100);
      await unlink(copy);
      expect(await source.announcedPrefixes(15169)).toContain("8.8.8.0/24");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe("createAsnSource - ripestat", () => {
  let server: Server;
  let base: string;
  const requests: string[] = [];
  const client = createOutboundClient({ allowCidrs: ["127.0.0.0/8", "::1/128"], timeoutMs: 5_000 });

  beforeAll(async () => {
    server = createServer((req, res) => {
      requests.push(req.url ?? "");
      const resource = new URL(req.url ?? "/", "http://x").searchParams.get("resource");
      const json = (body: unknown) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
      const timelines = [{ starttime: "2026-11-08T00:00:00", endtime: "2026-11-22T00:00:00" }];
      if (resource === "AS13335") {
        json({
          status: "ok",
          data: {
            resource: "13335",
            prefixes: [
              { prefix: "1.1.1.0/24", timelines },
              { prefix: "2606:4700::/32", timelines },
              { prefix: "1.0.0.0/24", timelines },
              { prefix: "104.16.0.1/13", timelines },
              { prefix: "1.1.1.0/24", timelines },
            ],
          },
        });
      } else if (resource === "AS64500") {
        json({ status: "error", messages: [["error", "Unknown resource"]], data: {} });
      } else if (resource === "AS64501") {
        res.writeHead(200, { "content-type": "text/html" }).end("<html>maintenance</html>");
      } else if (resource === "AS64502") {
        res.writeHead(503).end("busy");
      } else if (resource === "AS64503") {
        json({ status: "ok", data: { resource: "64504", prefixes: [] } });
      } else if (resource === "AS64505") {
        json({ status: "ok", data: { resource: "64505", prefixes: [{ prefix: "not-a-prefix" }] } });
      } else {
        json({ status: "ok", data: { resource: resource?.slice(2), prefixes: [] } });
      }
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await client.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it("announcedPrefixes - asks announced-prefixes for AS<n> and returns canonical, sorted, distinct CIDRs", async () => {
    const source = createAsnSource("ripestat", { client, baseUrl: `${base}/mirror/` });
    expect(await source.announcedPrefixes(13335)).toEqual(["1.0.0.0/24", "1.1.1.0/24", "104.16.0.0/13", "2606:4700::/32"]);
    expect(requests.at(-1)).toBe("/mirror/data/announced-prefixes/data.json?resource=AS13335");
  });

  it("announcedPrefixes - an ASN that announces nothing gives []", async () => {
    const source = createAsnSource("ripestat", { client, baseUrl: base });
    expect(await source.announcedPrefixes(65000)).toEqual([]);
  });

  it("announcedPrefixes - a status other than ok is asn_source_status with RIPEstat's message", async () => {
    const source = createAsnSource("ripestat", { client, baseUrl: base });
    await expect(source.announcedPrefixes(64500)).rejects.toMatchObject({ code: "asn_source_status", message: /Unknown resource/ });
  });

  it("announcedPrefixes - garbage, another resource or a bad prefix is asn_source_malformed", async () => {
    const source = createAsnSource("ripestat", { client, baseUrl: base });
    await expect(source.announcedPrefixes(64501)).rejects.toMatchObject({ code: "asn_source_malformed", message: /not JSON/ });
    await expect(source.announcedPrefixes(64503)).rejects.toMatchObject({ code: "asn_source_malformed", message: /64504/ });
    await expect(source.announcedPrefixes(64505)).rejects.toMatchObject({ code: "asn_source_malformed", message: /bad prefix/ });
  });

  it("announcedPrefixes - an HTTP error stays the outbound client's error", async () => {
    const source = createAsnSource("ripestat", { client, baseUrl: base });
    await expect(source.announcedPrefixes(64502)).rejects.toMatchObject({ code: "outbound_http_status", status: 503 });
  });

  it("announcedPrefixes - refuses what is not an ASN", async () => {
    const source = createAsnSource("ripestat", { client, baseUrl: base });
    await expect(source.announcedPrefixes(0)).rejects.toBeInstanceOf(RangeError);
    await expect(source.announcedPrefixes(2 ** 32)).rejects.toBeInstanceOf(RangeError);
  });
});
