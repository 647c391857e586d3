import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startIrrdServer } from "../../../../test/helpers/irrd-server.js";
import { tool } from "../../../../test/helpers/tools.js";
import { createIrrSource, IrrError } from "./irr-source.js";

// Nested sets, a loop (AS-LOOP ↔ AS-TOP), a missing member set, the same name in two sources
// (RIPE::AS-TOP differs from RADB's), a hierarchical name. Public ASNs: bgpq4 drops private and
// documentation ones.
const SETS = {
  RADB: {
    "AS-TOP": ["AS3333", "AS-MID", "AS-LOOP"],
    "AS-MID": ["AS1299", "AS-MISSING", "AS3333"],
    "AS-LOOP": ["AS2914", "AS-TOP"],
    "AS3333:AS-CUSTOMERS": ["AS6939", "AS-MID"],
    "AS-EMPTY": [],
    "AS-BIG": ["AS1", "AS2", "AS3", "AS4", "AS5"],
  },
  RIPE: {
    "AS-TOP": ["AS13335", "AS-RIPEONLY"],
    "AS-RIPEONLY": ["AS15169"],
  },
};

const bgpq4 = tool("bgpq4");
let irrd: Awaited<ReturnType<typeof startIrrdServer>>;
let legacy: Awaited<ReturnType<typeof startIrrdServer>>;

beforeAll(async () => {
  irrd = await startIrrdServer({ sets: SETS });
  legacy = await startIrrdServer({ sets: SETS });
  legacy.state.recursive = false;
});
afterAll(async () => {
  await irrd?.close();
  await legacy?.close();
});

const QUERIES = ["AS-TOP", "AS-MID", "AS-LOOP", "AS3333:AS-CUSTOMERS", "RIPE::AS-TOP", "AS-EMPTY"];

// Run asynchronously: the IRRd stand-in answers from this process's event loop.
async function bgpq4Members(port: number, query: string): Promise<number[]> {
  const run = await promisify(execFile)("bgpq4", ["-h", `127.0.0.1:${port}`, "-S", "RADB,RIPE", "-j", "-t", "-l", "members", query], { timeout: 10_000 });
  return (JSON.parse(run.stdout) as { members: number[] }).members;
}

const until = async (check: () => boolean) => {
  for (let i = 0; i < 100 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
};

describe("AS-SET expansion through IRR", () => {
  it("expands nested sets, stops at loops and skips a missing member set", async () => {
    const session = createIrrSource(irrd.url, { sources: ["RADB", "RIPE"] }).session();
    try {
      expect(await session.expand("AS-TOP")).toEqual([1299, 2914, 3333]);
      expect(await session.expand("AS3333:AS-CUSTOMERS")).toEqual([1299, 3333, 6939]);
      expect(await session.expand("RIPE::AS-TOP")).toEqual([13335, 15169]);
      expect(await session.expand("AS-EMPTY")).toEqual([]);
      await expect(session.expand("AS-NOWHERE")).rejects.toThrow(/AS-NOWHERE was not found/);
      // The pin covered one query: the default sources are selected again.
      expect(await session.expand("AS-TOP")).toEqual([1299, 2914, 3333]);
      expect(session.connections).toBe(1);
    } finally {
      session.close();
    }
    await until(() => irrd.state.queries.at(-1)!.at(-1) === "!q");
    expect(irrd.state.queries.at(-1)).toEqual([
      "!!",
      "!sRADB,RIPE",
      "!iAS-TOP,1",
      "!iAS3333:AS-CUSTOMERS,1",
      "!sRIPE",
      "!iAS-TOP,1",
      "!sRADB,RIPE",
      "!iAS-EMPTY,1",
      "!iAS-NOWHERE,1",
      "!iAS-TOP,1",
      "!q",
    ]);
  });

  it("resolves set names itself, each once, when the server answers direct members only", async () => {
    const session = createIrrSource(legacy.url, { sources: ["RADB", "RIPE"] }).session();
    try {
      expect(await session.expand("AS-TOP")).toEqual([1299, 2914, 3333]);
      expect(await session.expand("RIPE::AS-TOP")).toEqual([13335, 15169]);
    } finally {
      session.close();
    }
    const asked = legacy.state.queries.at(-1)!.filter((q) => q.startsWith("!iAS-TOP") || q.startsWith("!iAS-LOOP"));
    expect(asked).toEqual(["!iAS-TOP,1", "!iAS-LOOP,1", "!iAS-TOP,1"]); // the second AS-TOP is RIPE's
  });

  it("fails a set over IRR_MAX_MEMBERS, a source the server does not know, and a server that stalls", async () => {
    const limited = createIrrSource(irrd.url, { sources: ["RADB"], maxMembers: 4 }).session();
    await expect(limited.expand("AS-BIG")).rejects.toThrow(/more than 4 member ASNs/);
    await expect(limited.expand("NOSUCH::AS-TOP")).rejects.toThrow(IrrError);
    expect(await limited.expand("AS-MID")).toEqual([1299, 3333]);
    limited.close();

    irrd.state.hang = true;
    try {
      const slow = createIrrSource(irrd.url, { sources: ["RADB"], timeLimitMs: 300 }).session();
      const started = Date.now();
      await expect(slow.expand("AS-TOP")).rejects.toThrow(/longer than 0.3 s/);
      expect(Date.now() - started).toBeLessThan(2000);
      slow.close();
    } finally {
      irrd.state.hang = false;
    }
  });

  it("refuses an IRR_SOURCE that is not whois://host[:port]", () => {
    expect(() => createIrrSource("http://whois.radb.net")).toThrow(/whois:\/\/host/);
    expect(() => createIrrSource("whois://")).toThrow(/whois:\/\/host/);
  });

  it.skipIf(!bgpq4.available)("expands to the member ASNs bgpq4 finds for the same query on the same server", async () => {
    const session = createIrrSource(irrd.url, { sources: ["RADB", "RIPE"] }).session();
    const onLegacy = createIrrSource(legacy.url, { sources: ["RADB", "RIPE"] }).session();
    try {
      for (const query of QUERIES) {
        const expected = await bgpq4Members(irrd.port, query);
        expect(await session.expand(query), query).toEqual(expected);
        expect(await onLegacy.expand(query), `${query} resolved by the client`).toEqual(expected);
      }
    } finally {
      session.close();
      onLegacy.close();
    }
  });
});
