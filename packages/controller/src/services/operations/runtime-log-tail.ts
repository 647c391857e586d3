/**
 * Tail of an already opened file, read backwards in blocks so that only the end of a large log
 * is ever read. Knows nothing of names or directories; runtime-log-files.ts opens the file.
 *
 * How `lines`, `bytes` and `grep` combine:
 * - `bytes` is the window: only the last `bytes` bytes of the file are ever read, with or
 *   without `grep` (so one request reads at most 8 MiB, the `bytes` maximum).
 * - Lines are split on "\n"; a trailing "\n" ends the last line rather than starting an empty
 *   one, and a "\r" before it is dropped. The first line of the window is left out when the
 *   window cuts it (the byte before the window is not "\n").
 * - `grep` keeps the lines containing it as a literal, case-sensitive byte substring; `lines`
 *   then counts kept lines. Reading stops as soon as `lines` lines are kept, else at the start
 *   of the window. A grep answer therefore says nothing about content older than the window.
 * - `truncated` is true when the file has content before the oldest line that was examined
 *   (or when the window cut a line), i.e. older content was not read.
 */

/** The one method of fs/promises FileHandle that the tail needs; tests wrap it to count reads. */
export interface PositionalReader {
  read(buffer: Buffer, offset: number, length: number, position: number): Promise<{ bytesRead: number }>;
}

export interface TailLinesOptions {
  lines: number;
  bytes: number;
  grep?: string | undefined;
  /** Size of each backward read; 64 KiB unless a test wants many block boundaries. */
  blockSize?: number;
}

export interface TailLinesResult {
  lines: string[];
  truncated: boolean;
}

export const DEFAULT_BLOCK_SIZE = 64 * 1024;

const NEWLINE = 0x0a;

interface RawLine {
  bytes: Buffer;
  /** File offset of the line's first byte. */
  start: number;
  /** The window begins inside this line, so its beginning was never read. */
  cut: boolean;
}

/** The last lines of the first `size` bytes of `file`, as the module comment describes. */
export async function tailLines(file: PositionalReader, size: number, options: TailLinesOptions): Promise<TailLinesResult> {
  const windowStart = Math.max(0, size - options.bytes);
  const blockSize = options.blockSize ?? DEFAULT_BLOCK_SIZE;
  const needle = options.grep === undefined ? null : Buffer.from(options.grep, "utf8");
  const kept: Buffer[] = [];
  let oldestStart = size;

  for await (const line of linesBackward(file, size, windowStart, blockSize)) {
    oldestStart = line.start;
    if (line.cut) break;
    if (needle !== null && line.bytes.indexOf(needle) < 0) continue;
    kept.push(line.bytes);
    if (kept.length >= options.lines) break;
  }
  return { lines: kept.reverse().map(decodeLine), truncated: oldestStart > 0 };
}

/**
 * Yields the lines of [windowStart, size) newest first. The beginning of a line that spans
 * blocks is kept as a list of chunks and joined once, so a long line costs one copy, not one
 * per block. A file that shrinks while being read ends the scan early.
 */
async function* linesBackward(file: PositionalReader, size: number, windowStart: number, blockSize: number): AsyncGenerator<RawLine> {
  let pos = size;
  let carry: Buffer[] = [];
  let first = true;

  while (pos > windowStart) {
    const length = Math.min(blockSize, pos - windowStart);
    pos -= length;
    let block = await readFully(file, pos, length);
    if (block === null) return;
    if (first) {
      first = false;
      if (block[block.length - 1] === NEWLINE) block = block.subarray(0, block.length - 1);
    }
    let end = block.length;
    // end > 0 guard: Buffer#lastIndexOf treats a negative offset as counting from the end.
    while (end > 0) {
      const nl = block.lastIndexOf(NEWLINE, end - 1);
      if (nl < 0) break;
      const tail = block.subarray(nl + 1, end);
      yield { bytes: carry.length === 0 ? tail : Buffer.concat([tail, ...carry]), start: pos + nl + 1, cut: false };
      carry = [];
      end = nl;
    }
    carry.unshift(block.subarray(0, end));
  }

  if (size > windowStart) {
    const cut = windowStart > 0 && (await byteAt(file, windowStart - 1)) !== NEWLINE;
    yield { bytes: Buffer.concat(carry), start: windowStart, cut };
  }
}

/** Reads exactly `length` bytes at `position`, or null when the file ended first. */
async function readFully(file: PositionalReader, position: number, length: number): Promise<Buffer | null> {
  const buffer = Buffer.allocUnsafe(length);
  let filled = 0;
  while (filled < length) {
    const { bytesRead } = await file.read(buffer, filled, length - filled, position + filled);
    if (bytesRead === 0) return null;
    filled += bytesRead;
  }
  return buffer;
}

async function byteAt(file: PositionalReader, position: number): Promise<number | undefined> {
  return (await readFully(file, position, 1))?.[0];
}

// "\n" never occurs inside a multi-byte UTF-8 sequence, so decoding line by line is exact.
function decodeLine(bytes: Buffer): string {
  const text = bytes.toString("utf8");
  return text.endsWith("\r") ? text.slice(0, -1) : text;
}
