import { mkdir, mkdtemp, open, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach } from "vitest";

// What the runtime-log file tests share: a fresh log directory per test and files to put in it.

export const MiB = 1024 * 1024;

/** A log directory (`dir`) inside a scratch directory (`root`, for files "outside" it), new for each test. */
export function useLogDirectory(): { root: string; dir: string } {
  const where = { root: "", dir: "" };
  beforeEach(async () => {
    where.root = await mkdtemp(path.join(tmpdir(), "rlc-logs-"));
    where.dir = path.join(where.root, "logs");
    await mkdir(where.dir);
  });
  afterEach(() => rm(where.root, { recursive: true, force: true }));
  return where;
}

/** `count` numbered lines of 10 bytes each. */
export function numbered(count: number): string {
  let text = "";
  for (let i = 1; i <= count; i++) text += `line-${String(i).padStart(4, "0")}\n`;
  return text;
}

/** A sparse file of `size` bytes whose last bytes are `end`; takes no disk space to speak of. */
export async function sparse(file: string, size: number, end: string): Promise<void> {
  const handle = await open(file, "w");
  const bytes = Buffer.from(end);
  await handle.truncate(size);
  await handle.write(bytes, 0, bytes.length, size - bytes.length);
  await handle.close();
}

/** What a test compares to prove a file was left alone. */
export async function fingerprint(file: string) {
  const stats = await stat(file);
  return { content: await readFile(file, "utf8"), mtimeMs: stats.mtimeMs, size: stats.size };
}
