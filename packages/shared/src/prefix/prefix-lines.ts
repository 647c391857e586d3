import { writeDecimal, writeIPv4, writeIPv6 } from "./address.js";
import type { PrefixTable } from "./prefix-table.js";

/**
 * Lines of bytes, one a prefix: prefix i's canonical text (formatPrefix's) followed by
 * `suffixes[tags[i]]`, for prefixes [from, to) of `table`; `offsets[k]` is where line k starts
 * (to - from + 1 entries, the last the length). Written straight from the words: a million
 * lines in tens of milliseconds, where building them as strings and encoding those takes
 * several hundred (the revision digest's lines are these).
 */
export function writePrefixLines(
  table: PrefixTable,
  tags: ArrayLike<number>,
  suffixes: readonly Uint8Array[],
  from = 0,
  to = table.count,
): { bytes: Uint8Array; offsets: Uint32Array } {
  const { words, lens, W } = table;
  const most = W === 1 ? 18 : 43; // "255.255.255.255/32", a full IPv6 address and "/128"
  let size = 0;
  for (let i = from; i < to; i++) size += most + suffixes[tags[i]!]!.length;
  const bytes = new Uint8Array(size);
  const offsets = new Uint32Array(to - from + 1);
  let pos = 0;
  for (let i = from; i < to; i++) {
    pos = W === 1 ? writeIPv4(words, i, bytes, pos) : writeIPv6(words, i * 4, bytes, pos);
    bytes[pos++] = 47;
    pos = writeDecimal(bytes, pos, lens[i]!);
    const suffix = suffixes[tags[i]!]!;
    if (suffix.length < 16) for (let k = 0; k < suffix.length; k++) bytes[pos++] = suffix[k]!;
    else {
      bytes.set(suffix, pos);
      pos += suffix.length;
    }
    offsets[i - from + 1] = pos;
  }
  return { bytes: bytes.subarray(0, pos), offsets };
}
