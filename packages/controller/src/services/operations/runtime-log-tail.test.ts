import { mkdtemp, open, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type PositionalReader, tailLines } from "./runtime-log-tail.js";

const MiB = 1024 * 1024;

/** An in-memory file that records how many bytes were asked for. */
function memoryFile(content: Buffer): PositionalReader & { bytesRead: number } {
  const file = {
    bytesRead: 0,
    async read(buffer: Buffer, offset: number, length: number, position: number) {
      const bytesRead = content.copy(buffer, offset, position, Math.min(content.length, position + length));
      file.bytesRead += bytesRead;
      return { bytesRead };
    },
  };
  return file;
}

/** The same rules as runtime-log-tail.ts, written the slow and obvious way on the whole content. */
function referenceTail(content: Buffer, lines: number, bytes: number, grep?: string) {
  const windowStart = Math.max(0, content.length - bytes);
  const segments: { text: Buffer; start: number }[] = [];
  let start = windowStart;
  for (let i = windowStart; i < content.length; i++) {
    if (content[i] === 0x0a) {
      segments.push({ text: content.subarray(start, i), start });
      start = i + 1;
    }
  }
  if (start < content.length) segments.push({ text: content.subarray(start), start });
  const cut = windowStart > 0 && content[windowStart - 1] !== 0x0a;
  if (cut) segments.shift();
  const matching = grep === undefined ? segments : segments.filter((s) => s.text.includes(Buffer.from(grep)));
  const kept = matching.slice(-lines);
  // Reading stops at the `lines`-th kept line from the end, else at the start of the window.
  const truncated = matching.length >= lines ? kept[0]!.start > 0 : windowStart > 0;
  return { lines: kept.map((s) => s.text.toString("utf8").replace(/\r$/, "")), truncated };
}

function lines(count: number, width = 10): string {
  let text = "";
  for (let i = 1; i <= count; i++) text += `line-${String(i).padStart(width - 6, "0")}\n`;
  return text;
}

describe("tailLines", () => {
  it("tailLines - agrees with the whole-content reference on random content, block sizes and limits", async () => {
    let seed = 42;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const alphabet = ["a", "b", "ab", "\n", "\n", "\r\n", "é", "€", "x"];
    for (let round = 0; round < 3000; round++) {
      let text = "";
      const length = random(120);
      for (let i = 0; i < length; i++) text += alphabet[random(alphabet.length)];
      const content = Buffer.from(text, "utf8");
      const options = {
        lines: 1 + random(8),
        bytes: 1 + random(200),
        grep: [undefined, "a", "ab", "é"][random(4)],
        blockSize: 1 + random(17),
      };
      const got = await tailLines(memoryFile(content), content.length, options);
      expect(got, JSON.stringify({ text, options })).toEqual(referenceTail(content, options.lines, options.bytes, options.grep));
    }
  });

  it("tailLines - reads only the lines asked for, not the whole bytes window", async () => {
    const content = Buffer.from(lines(10_000));
    const file = memoryFile(content);
    const got = await tailLines(file, content.length, { lines: 3, bytes: 8 * MiB, blockSize: 4096 });
    expect(got).toEqual({ lines: ["line-9998", "line-9999", "line-10000"], truncated: true });
    expect(file.bytesRead).toBe(4096);
  });

  it("tailLines - keeps a first line that the window starts exactly at", async () => {
    const content = Buffer.from(lines(5)); // 10 bytes per line
    const got = await tailLines(memoryFile(content), content.length, { lines: 100, bytes: 30 });
    expect(got).toEqual({ lines: ["line-0003", "line-0004", "line-0005"], truncated: true });
  });

  it("tailLines - joins a line spanning many blocks once and decodes UTF-8 split across blocks", async () => {
    const long = "€".repeat(5000);
    const content = Buffer.from(`first\n${long}\nlast`);
    const got = await tailLines(memoryFile(content), content.length, { lines: 10, bytes: content.length, blockSize: 7 });
    expect(got).toEqual({ lines: ["first", long, "last"], truncated: false });
  });

  it("tailLines - stops without error when the file shrank while being read", async () => {
    const content = Buffer.from(lines(100));
    const got = await tailLines(memoryFile(content.subarray(0, 500)), content.length, { lines: 5, bytes: 1000 });
    expect(got).toEqual({ lines: [], truncated: true });
  });

  describe("on a 600 MiB sparse file", () => {
    let dir = "";
    let file = "";
    beforeAll(async () => {
      dir = await mkdtemp(path.join(tmpdir(), "rlc-tail-"));
      file = path.join(dir, "big.log");
      const handle = await open(file, "w");
      // The leading "\n" ends the run of zero bytes, which is one long line cut by the window.
      const end = Buffer.from("\ntail one\ntail two\n");
      await handle.truncate(600 * MiB);
      await handle.write(end, 0, end.length, 600 * MiB - end.length);
      await handle.close();
    });
    afterAll(() => rm(dir, { recursive: true, force: true }));

    it("tailLines - reads at most the bytes window plus the byte before it", async () => {
      const handle = await open(file, "r");
      try {
        let asked = 0;
        const counting: PositionalReader = {
          read(buffer, offset, length, position) {
            asked += length;
            return handle.read(buffer, offset, length, position);
          },
        };
        const size = (await handle.stat()).size;
        const got = await tailLines(counting, size, { lines: 10_000, bytes: 65_536, grep: "tail" });
        expect(got).toEqual({ lines: ["tail one", "tail two"], truncated: true });
        expect(asked).toBe(65_536 + 1);
      } finally {
        await handle.close();
      }
    });
  });
});
