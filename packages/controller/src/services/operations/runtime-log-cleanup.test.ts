import { stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { AppError } from "@rlc/shared/errors";
import { beforeEach, describe, expect, it } from "vitest";
import { cleanupLogFile, estimateAutoCleanup, listLogFiles, runAutoCleanup, tailLogFile } from "./runtime-log-files.js";
import { MiB, numbered, sparse, useLogDirectory } from "./runtime-log-files.test-helper.js";

// Truncating and deleting a log file, by hand and by the automatic cleanup.

const logs = useLogDirectory();

describe("cleanupLogFile", () => {
  it("cleanupLogFile - truncate keeps the file at 0 bytes", async () => {
    await writeFile(path.join(logs.dir, "app.log"), numbered(100));
    expect(await cleanupLogFile(logs.dir, "app.log", "truncate")).toEqual({ bytes_before: 1000, bytes_after: 0 });
    expect((await stat(path.join(logs.dir, "app.log"))).size).toBe(0);
  });

  it("cleanupLogFile - delete removes the file", async () => {
    await writeFile(path.join(logs.dir, "app.log"), numbered(100));
    expect(await cleanupLogFile(logs.dir, "app.log", "delete")).toEqual({ bytes_before: 1000, bytes_after: 0 });
    await expect(stat(path.join(logs.dir, "app.log"))).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("cleanupLogFile - refuses a 600 MiB file with file_too_large and leaves it untouched", async () => {
    const file = path.join(logs.dir, "big.log");
    await sparse(file, 600 * MiB, "\nthe end\n");
    const before = await stat(file);
    for (const mode of ["truncate", "delete"] as const) {
      const refusal = cleanupLogFile(logs.dir, "big.log", mode);
      await expect(refusal).rejects.toBeInstanceOf(AppError);
      await expect(refusal).rejects.toMatchObject({ code: "file_too_large", status: 413, size: 600 * MiB });
    }
    const after = await stat(file);
    expect([after.size, after.mtimeMs, after.ino]).toEqual([before.size, before.mtimeMs, before.ino]);
    expect((await tailLogFile(logs.dir, "big.log", { lines: 1 })).lines).toEqual(["the end"]);
  });

  it("cleanupLogFile - a file of exactly the limit is cleaned, one byte more is not", async () => {
    await writeFile(path.join(logs.dir, "app.log"), "0123456789");
    await expect(cleanupLogFile(logs.dir, "app.log", "truncate", { maxBytes: 9 })).rejects.toMatchObject({ code: "file_too_large" });
    expect(await cleanupLogFile(logs.dir, "app.log", "truncate", { maxBytes: 10 })).toEqual({ bytes_before: 10, bytes_after: 0 });
  });

  it("cleanupLogFile - a missing file is not_found and an unknown mode is validation_failed", async () => {
    await expect(cleanupLogFile(logs.dir, "missing.log", "truncate")).rejects.toMatchObject({ code: "not_found" });
    await expect(cleanupLogFile(logs.dir, "missing.log", "delete")).rejects.toMatchObject({ code: "not_found" });
    await writeFile(path.join(logs.dir, "app.log"), "x");
    await expect(cleanupLogFile(logs.dir, "app.log", "shred" as "delete")).rejects.toMatchObject({ code: "validation_failed", field: "mode" });
    expect((await stat(path.join(logs.dir, "app.log"))).size).toBe(1);
  });
});

describe("automatic cleanup", () => {
  beforeEach(async () => {
    await writeFile(path.join(logs.dir, "small.log"), "x".repeat(10));
    await writeFile(path.join(logs.dir, "edge.log"), "x".repeat(100));
    await writeFile(path.join(logs.dir, "large.log"), "x".repeat(1000));
    await sparse(path.join(logs.dir, "huge.log"), 600 * MiB, "\nend\n");
  });

  const sizes = async () => (await listLogFiles(logs.dir)).items.map((item) => [item.name, item.size]);

  it("estimateAutoCleanup - lists the files strictly above the threshold", async () => {
    expect(await estimateAutoCleanup(logs.dir, 100)).toEqual({
      threshold_bytes: 100,
      files: [expect.objectContaining({ name: "huge.log", size: 600 * MiB }), expect.objectContaining({ name: "large.log", size: 1000 })],
      total_bytes: 600 * MiB + 1000,
    });
    expect((await estimateAutoCleanup(logs.dir, 1000 * MiB)).files).toEqual([]);
    await expect(estimateAutoCleanup(logs.dir, 0)).rejects.toMatchObject({ code: "validation_failed", field: "threshold_bytes" });
  });

  it("runAutoCleanup - a dry run reports what would be freed and changes nothing", async () => {
    const before = await sizes();
    const run = await runAutoCleanup(logs.dir, { thresholdBytes: 50, mode: "delete", dryRun: true });
    expect(run).toEqual({
      dry_run: true,
      cleaned: ["edge.log", "huge.log", "large.log"].map((name) =>
        expect.objectContaining({ name, mode: "delete", bytes_after: 0, result: "dry_run", error: null }),
      ),
      freed_bytes: 100 + 600 * MiB + 1000,
    });
    expect(await sizes()).toEqual(before);
  });

  it("runAutoCleanup - truncates the files above the threshold, including ones over 512 MiB", async () => {
    const run = await runAutoCleanup(logs.dir, { thresholdBytes: 100, mode: "truncate" });
    expect(run).toEqual({
      dry_run: false,
      cleaned: [
        { name: "huge.log", mode: "truncate", bytes_before: 600 * MiB, bytes_after: 0, result: "ok", error: null },
        { name: "large.log", mode: "truncate", bytes_before: 1000, bytes_after: 0, result: "ok", error: null },
      ],
      freed_bytes: 600 * MiB + 1000,
    });
    expect(await sizes()).toEqual([
      ["edge.log", 100],
      ["huge.log", 0],
      ["large.log", 0],
      ["small.log", 10],
    ]);
  });

  it("runAutoCleanup - deletes, and records a file over maxBytes as failed while cleaning the rest", async () => {
    const run = await runAutoCleanup(logs.dir, { thresholdBytes: 50, mode: "delete", maxBytes: 512 * MiB });
    expect(run.cleaned).toEqual([
      { name: "edge.log", mode: "delete", bytes_before: 100, bytes_after: 0, result: "ok", error: null },
      { name: "huge.log", mode: "delete", bytes_before: 600 * MiB, bytes_after: 600 * MiB, result: "failed", error: "file_too_large" },
      { name: "large.log", mode: "delete", bytes_before: 1000, bytes_after: 0, result: "ok", error: null },
    ]);
    expect(run.freed_bytes).toBe(1100);
    expect(await sizes()).toEqual([
      ["huge.log", 600 * MiB],
      ["small.log", 10],
    ]);
  });

  it("runAutoCleanup - refuses an unknown mode before cleaning anything", async () => {
    await expect(runAutoCleanup(logs.dir, { thresholdBytes: 1, mode: "zero" as "truncate" })).rejects.toMatchObject({ code: "validation_failed" });
    expect((await sizes()).length).toBe(4);
  });
});
