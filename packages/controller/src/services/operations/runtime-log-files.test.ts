import { execFileSync, spawn } from "node:child_process";
import { mkdir, readFile, stat, symlink, utimes, writeFile } from "node:fs/promises";
import path from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { cleanupLogFile, isValidLogName, listLogFiles, runAutoCleanup, tailLogFile } from "./runtime-log-files.js";
import { fingerprint, MiB, numbered, sparse, useLogDirectory } from "./runtime-log-files.test-helper.js";

const logs = useLogDirectory();
let root = ""; // holds the log directory and the files "outside" it
let dir = "";
beforeEach(() => {
  ({ root, dir } = logs);
});

describe("isValidLogName", () => {
  it("isValidLogName - accepts lower-case base names ending in .log", () => {
    for (const name of ["app.log", "a.log", "0.log", "api_server-1.2.log", "a..log", "x.log.log"]) {
      expect(isValidLogName(name), name).toBe(true);
    }
  });

  it("isValidLogName - refuses paths, encodings, hidden files, upper case and other suffixes", () => {
    const bad = [
      "",
      ".log",
      "..log",
      ".hidden.log",
      "../x.log",
      "..",
      "%2e%2e%2fx.log",
      "a/b.log",
      "/etc/passwd",
      "/tmp/x.log",
      "a\0.log",
      "A.log",
      "app.LOG",
      "app.txt",
      "app.log.gz",
      "app.log/",
      "app.log\n",
      " app.log",
      "a\\b.log",
      `${"a".repeat(252)}.log`,
    ];
    for (const name of bad) expect(isValidLogName(name), JSON.stringify(name)).toBe(false);
    expect(isValidLogName(`${"a".repeat(251)}.log`)).toBe(true);
    expect(isValidLogName(undefined)).toBe(false);
    expect(isValidLogName(["app.log"])).toBe(false);
  });
});

describe("listLogFiles", () => {
  it("listLogFiles - lists regular .log files sorted by name with size and RFC 3339 mtime", async () => {
    await writeFile(path.join(dir, "b.log"), "hello\n");
    await writeFile(path.join(dir, "a.log"), "");
    await writeFile(path.join(dir, "a..log"), "xyz");
    await utimes(path.join(dir, "b.log"), new Date("2024-05-06T07:08:09.123Z"), new Date("2024-05-06T07:08:09.123Z"));
    const list = await listLogFiles(dir);
    expect(list.items.map((item) => item.name)).toEqual(["a..log", "a.log", "b.log"]);
    expect(list.items[2]).toEqual({ name: "b.log", size: 6, mtime: "2024-05-06T07:08:09.123Z" });
    expect(list.total_bytes).toBe(9);
  });

  it("listLogFiles - leaves out symlinks, directories, FIFOs and names off the pattern", async () => {
    await writeFile(path.join(root, "outside.log"), "secret\n");
    await symlink(path.join(root, "outside.log"), path.join(dir, "evil.log"));
    await mkdir(path.join(dir, "dir.log"));
    execFileSync("mkfifo", [path.join(dir, "pipe.log")]);
    for (const name of ["Upper.log", ".hidden.log", "notes.txt", "app.log.1"]) await writeFile(path.join(dir, name), "x");
    await writeFile(path.join(dir, "ok.log"), "x");
    expect(await listLogFiles(dir)).toEqual({ items: [expect.objectContaining({ name: "ok.log" })], total_bytes: 1 });
  });

  it("listLogFiles - an empty directory lists nothing, a missing one is runtime_logs_unavailable", async () => {
    expect(await listLogFiles(dir)).toEqual({ items: [], total_bytes: 0 });
    await expect(listLogFiles(path.join(root, "missing"))).rejects.toMatchObject({ code: "runtime_logs_unavailable", status: 503 });
  });
});

describe("path safety", () => {
  const traversal = [
    "../outside.log",
    "..%2foutside.log",
    "%2e%2e%2foutside.log",
    "logs/../outside.log",
    "a/b.log",
    "/etc/passwd",
    "outside.log\0",
    "a\0.log",
    "A.log",
    "outside",
    "outside.txt",
  ];

  beforeEach(async () => {
    await writeFile(path.join(root, "outside.log"), "outside content\n");
    await utimes(path.join(root, "outside.log"), new Date("2020-01-01T00:00:00Z"), new Date("2020-01-01T00:00:00Z"));
    await symlink(path.join(root, "outside.log"), path.join(dir, "evil.log"));
    await mkdir(path.join(dir, "a"));
    await writeFile(path.join(dir, "a", "b.log"), "nested\n");
  });

  it("path safety - refuses traversal, absolute and malformed names with validation_failed before touching anything", async () => {
    const before = await fingerprint(path.join(root, "outside.log"));
    for (const name of [...traversal, path.join(root, "outside.log")]) {
      await expect(tailLogFile(dir, name), name).rejects.toMatchObject({ code: "validation_failed", field: "filename" });
      for (const mode of ["truncate", "delete"] as const) {
        await expect(cleanupLogFile(dir, name, mode), name).rejects.toMatchObject({ code: "validation_failed" });
      }
    }
    expect(await fingerprint(path.join(root, "outside.log"))).toEqual(before);
    expect(await readFile(path.join(dir, "a", "b.log"), "utf8")).toBe("nested\n");
  });

  it("path safety - never follows a symlink inside the directory for tail, truncate or delete", async () => {
    const before = await fingerprint(path.join(root, "outside.log"));
    await expect(tailLogFile(dir, "evil.log")).rejects.toMatchObject({ code: "not_found" });
    await expect(cleanupLogFile(dir, "evil.log", "truncate")).rejects.toMatchObject({ code: "not_found" });
    await expect(cleanupLogFile(dir, "evil.log", "delete")).rejects.toMatchObject({ code: "not_found" });
    expect(await fingerprint(path.join(root, "outside.log"))).toEqual(before);
    expect((await listLogFiles(dir)).items).toEqual([]);
  });

  it("path safety - auto cleanup skips the symlink and leaves its target alone", async () => {
    const before = await fingerprint(path.join(root, "outside.log"));
    await writeFile(path.join(dir, "real.log"), "x".repeat(100));
    const run = await runAutoCleanup(dir, { thresholdBytes: 1, mode: "truncate" });
    expect(run.cleaned.map((item) => item.name)).toEqual(["real.log"]);
    expect(await fingerprint(path.join(root, "outside.log"))).toEqual(before);
  });

  it("path safety - a symlink swapped in between the checks and the open or unlink is still never followed", async () => {
    // Another process keeps renaming a regular file and a symlink onto race.log, so some calls
    // lstat the regular file and then open whatever is there a moment later.
    const outside = path.join(root, "outside.log");
    const before = await fingerprint(outside);
    const swapper = spawn(
      process.execPath,
      [
        "-e",
        `
      const fs = require("node:fs"); const path = require("node:path"); const dir = process.argv[1];
      const end = Date.now() + 1500;
      while (Date.now() < end) {
        fs.writeFileSync(path.join(dir, "regular.tmp"), "decoy decoy decoy\\n");
        fs.renameSync(path.join(dir, "regular.tmp"), path.join(dir, "race.log"));
        try { fs.unlinkSync(path.join(dir, "link.tmp")); } catch {}
        fs.symlinkSync(process.argv[2], path.join(dir, "link.tmp"));
        fs.renameSync(path.join(dir, "link.tmp"), path.join(dir, "race.log"));
      }`,
        dir,
        outside,
      ],
      { stdio: "ignore" },
    );
    const exited = new Promise((resolve) => swapper.once("exit", resolve));
    const outcomes = new Set<string>();
    try {
      const end = Date.now() + 1000;
      while (Date.now() < end) {
        const attempts = [tailLogFile(dir, "race.log"), cleanupLogFile(dir, "race.log", "truncate"), cleanupLogFile(dir, "race.log", "delete")];
        for (const attempt of await Promise.allSettled(attempts)) {
          outcomes.add(attempt.status === "fulfilled" ? "ok" : (attempt.reason as { code: string }).code);
          if (attempt.status === "fulfilled" && "lines" in attempt.value) expect(attempt.value.lines).not.toContain("outside content");
        }
      }
    } finally {
      swapper.kill();
      await exited;
    }
    expect(outcomes).toContain("ok"); // the race was really run against a regular file too
    expect(await fingerprint(outside)).toEqual(before);
  });

  it("path safety - a directory or FIFO named like a log is not_found and does not hang", async () => {
    await mkdir(path.join(dir, "dir.log"));
    execFileSync("mkfifo", [path.join(dir, "pipe.log")]);
    for (const name of ["dir.log", "pipe.log"]) {
      await expect(tailLogFile(dir, name)).rejects.toMatchObject({ code: "not_found" });
      await expect(cleanupLogFile(dir, name, "truncate")).rejects.toMatchObject({ code: "not_found" });
      await expect(cleanupLogFile(dir, name, "delete")).rejects.toMatchObject({ code: "not_found" });
    }
    expect((await stat(path.join(dir, "dir.log"))).isDirectory()).toBe(true);
  });
});

describe("tailLogFile", () => {
  it("tailLogFile - returns the last 200 lines by default with name, size and mtime", async () => {
    await writeFile(path.join(dir, "app.log"), numbered(1000));
    const tail = await tailLogFile(dir, "app.log");
    expect(tail.lines).toHaveLength(200);
    expect(tail.lines[0]).toBe("line-0801");
    expect(tail.lines[199]).toBe("line-1000");
    expect(tail).toMatchObject({ name: "app.log", size: 10_000, truncated: true });
    expect(tail.mtime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it("tailLogFile - a file shorter than both limits is returned whole, not truncated", async () => {
    await writeFile(path.join(dir, "app.log"), "one\r\ntwo\nthree");
    expect(await tailLogFile(dir, "app.log")).toMatchObject({ lines: ["one", "two", "three"], truncated: false });
  });

  it("tailLogFile - an empty file has no lines", async () => {
    await writeFile(path.join(dir, "empty.log"), "");
    expect(await tailLogFile(dir, "empty.log")).toMatchObject({ size: 0, lines: [], truncated: false });
  });

  it("tailLogFile - the smaller of the lines and bytes tails wins", async () => {
    await writeFile(path.join(dir, "app.log"), numbered(100));
    expect((await tailLogFile(dir, "app.log", { lines: 2, bytes: 1000 })).lines).toEqual(["line-0099", "line-0100"]);
    expect((await tailLogFile(dir, "app.log", { lines: 50, bytes: 30 })).lines).toEqual(["line-0098", "line-0099", "line-0100"]);
  });

  it("tailLogFile - leaves out the line cut at the start of the bytes window", async () => {
    await writeFile(path.join(dir, "app.log"), numbered(100));
    const tail = await tailLogFile(dir, "app.log", { lines: 50, bytes: 35 });
    expect(tail).toMatchObject({ lines: ["line-0098", "line-0099", "line-0100"], truncated: true });
    expect(await tailLogFile(dir, "app.log", { bytes: 5 })).toMatchObject({ lines: [], truncated: true });
  });

  it("tailLogFile - grep is a literal substring, so regex syntax matches only itself", async () => {
    const evil = `${"a".repeat(5000)}!`; // would backtrack for ages against /(a+)+$/
    const content = [evil, "x (a+)+$ y", evil, ".* literal", "anything", "(a+)+", "tail .*"].join("\n");
    await writeFile(path.join(dir, "app.log"), `${content}\n`);
    const started = performance.now();
    expect((await tailLogFile(dir, "app.log", { grep: "(a+)+$" })).lines).toEqual(["x (a+)+$ y"]);
    expect((await tailLogFile(dir, "app.log", { grep: ".*" })).lines).toEqual([".* literal", "tail .*"]);
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it("tailLogFile - grep applies before lines counts and scans only the bytes window", async () => {
    let content = "";
    for (let i = 1; i <= 1000; i++) content += i % 100 === 0 ? `match ${i}\n` : `noise ${i}\n`;
    await writeFile(path.join(dir, "app.log"), content);
    expect(await tailLogFile(dir, "app.log", { grep: "match", lines: 3, bytes: 8 * MiB })).toMatchObject({
      lines: ["match 800", "match 900", "match 1000"],
      truncated: true,
    });
    // All ten matches lie in the file, but the last 1000 bytes hold only the last one.
    expect(await tailLogFile(dir, "app.log", { grep: "match", lines: 100, bytes: 1000 })).toMatchObject({
      lines: ["match 1000"],
      truncated: true,
    });
    expect((await tailLogFile(dir, "app.log", { grep: "match", lines: 100, bytes: 8 * MiB })).lines).toHaveLength(10);
    expect(await tailLogFile(dir, "app.log", { grep: "nowhere" })).toMatchObject({ lines: [] });
  });

  it("tailLogFile - answers a 600 MiB sparse file quickly from its end", async () => {
    await sparse(path.join(dir, "big.log"), 600 * MiB, "\nsecond to last\nlast line\n");
    const started = performance.now();
    const tail = await tailLogFile(dir, "big.log", { lines: 5 });
    expect(performance.now() - started).toBeLessThan(500);
    expect(tail).toMatchObject({ size: 600 * MiB, lines: ["second to last", "last line"], truncated: true });
    expect((await tailLogFile(dir, "big.log", { lines: 1 })).lines).toEqual(["last line"]);
    expect((await tailLogFile(dir, "big.log", { grep: "second", bytes: 8 * MiB })).lines).toEqual(["second to last"]);
  });

  it("tailLogFile - refuses out-of-range options and answers not_found for a missing file", async () => {
    await writeFile(path.join(dir, "app.log"), "x\n");
    const bad = [
      { lines: 0 },
      { lines: 10_001 },
      { lines: 1.5 },
      { bytes: 0 },
      { bytes: 8 * MiB + 1 },
      { bytes: Number.NaN },
      { grep: "" },
      { grep: "g".repeat(257) },
    ];
    for (const options of bad) {
      await expect(tailLogFile(dir, "app.log", options), JSON.stringify(options)).rejects.toMatchObject({ code: "validation_failed" });
    }
    expect((await tailLogFile(dir, "app.log", { lines: 10_000, bytes: 8 * MiB, grep: "😀".repeat(256) })).lines).toEqual([]);
    await expect(tailLogFile(dir, "missing.log")).rejects.toMatchObject({ code: "not_found", status: 404, name: "LogFileNotFoundError" });
    await expect(tailLogFile(dir, "app.log", { lines: 0 })).rejects.toMatchObject({
      status: 400,
      errors: [{ path: "lines", message: "lines must be an integer from 1 to 10000" }],
    });
  });
});
