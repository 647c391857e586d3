import { applyPrefixDeltaBytes, diffPrefixLines, encodePrefixLines, PREFIX_DELTA_FORMAT } from "@rlc/shared/bundle";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { encodeLogRecord, readLogRecords, replayDeltas } from "./prefix-log.js";

// The log's records read back whole or not at all, and a replay of scripts gives what applying
// them one by one gives (applyPrefixDeltaBytes, what verifyBundle applies), or fails as it does.

const record = (revision: number, delta: string) => ({
  revision_id: revision,
  baseSha256: "a".repeat(64),
  sha256: revision.toString(16).padStart(64, "0"),
  delta: Buffer.from(delta),
});

describe("readLogRecords", () => {
  it("reads back what was written, and a record cut anywhere or changed in any byte as no record", () => {
    const records = [record(1, `${PREFIX_DELTA_FORMAT}\n=3\n`), record(2 ** 40 + 7, `${PREFIX_DELTA_FORMAT}\n+10.0.0.0/8\t\n-3\n`)];
    const log = Buffer.concat(records.map(encodeLogRecord));
    const read = [...readLogRecords(log)];
    expect(read.map(({ end: _, ...r }) => ({ ...r, delta: Buffer.from(r.delta) }))).toEqual(records);
    const first = encodeLogRecord(records[0] as (typeof records)[0]).length;
    for (let cut = first; cut < log.length; cut++) expect([...readLogRecords(log.subarray(0, cut))].length, `cut at ${cut}`).toBe(1);
    for (let at = first; at < log.length; at++) {
      const damaged = Buffer.from(log);
      damaged[at] = (damaged[at] as number) ^ 0x10;
      expect([...readLogRecords(damaged)].length, `byte ${at}`).toBe(1);
    }
  });
});

const line = fc.tuple(fc.nat(40), fc.constantFrom("65000:1", "65000:2", "")).map(([n, c]) => `10.0.${n}.0/24\t${c}`);
const lines = fc.uniqueArray(line, { maxLength: 30, selector: (l) => l.split("\t")[0] }).map((l) => l.sort());
/** A script: mostly the diff from one list to the next, sometimes random steps (that may not fit). */
const script = (from: string[]) =>
  fc.oneof(
    { weight: 4, arbitrary: lines.map((to) => ({ to, bytes: diffPrefixLines(from, to) })) },
    {
      weight: 1,
      arbitrary: fc
        .array(
          fc.oneof(
            fc.nat(8).map((n) => `=${n}`),
            fc.nat(8).map((n) => `-${n}`),
            line.map((l) => `+${l}`),
            fc.constantFrom("=x", "*1", "="),
          ),
          {
            maxLength: 6,
          },
        )
        .map((ops) => ({ to: null, bytes: Buffer.from(`${[PREFIX_DELTA_FORMAT, ...ops].join("\n")}\n`) })),
    },
  );

/** `n` scripts, each from the list the one before gave (after a random one, from the one before it). */
const chainFrom = (from: string[], n: number): fc.Arbitrary<Buffer[]> =>
  n === 0 ? fc.constant([]) : script(from).chain((s) => chainFrom(s.to ?? from, n - 1).map((rest) => [s.bytes, ...rest]));

describe("replayDeltas", () => {
  it("gives what applying the scripts one by one gives, and fails where that fails", () => {
    const chains = fc.tuple(lines, fc.nat(5)).chain(([start, n]) => chainFrom(start, n).map((scripts) => [start, scripts] as const));
    fc.assert(
      fc.property(chains, ([start, scripts]) => {
        const base = encodePrefixLines(start);
        const expected = (() => {
          try {
            return scripts.reduce<Buffer>((section, s) => applyPrefixDeltaBytes(section, s), base);
          } catch {
            return "fails";
          }
        })();
        let got: Buffer | string;
        try {
          got = replayDeltas(base, scripts);
        } catch {
          got = "fails";
        }
        expect(typeof got === "string" ? got : got.toString()).toBe(typeof expected === "string" ? expected : expected.toString());
      }),
      { numRuns: 500 },
    );
  });
});
