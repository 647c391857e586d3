// Text ⇄ 32-bit words for IPv4 and IPv6 addresses.
//
// An IPv4 address is one word, an IPv6 address four words, most significant first. The parsers
// write into a caller's Uint32Array at an offset, so bulk parsing allocates nothing per prefix,
// and return `null` on success or a short reason on failure (no exceptions on the hot path).

/** Address family. */
export type Family = 4 | 6;

/** Number of 32-bit words of an address of `family`. */
export function wordCount(family: Family): 1 | 4 {
  return family === 4 ? 1 : 4;
}

/** Parses a dotted quad in `text[start, end)` into `out[off]`; returns a reason when it is not one. */
export function parseIPv4Into(text: string, start: number, end: number, out: Uint32Array, off: number): string | null {
  let value = 0;
  let part = 0;
  let digits = 0;
  let dots = 0;
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c >= 48 && c <= 57) {
      if (digits === 1 && part === 0) return "leading zeros are not allowed in an IPv4 address";
      part = part * 10 + (c - 48);
      digits++;
      if (part > 255) return "each part of an IPv4 address must be 0..255";
    } else if (c === 46) {
      if (digits === 0 || dots === 3) return "an IPv4 address has four decimal parts separated by dots";
      value = value * 256 + part;
      dots++;
      part = 0;
      digits = 0;
    } else {
      return unexpected(text, i);
    }
  }
  if (digits === 0 || dots !== 3) return "an IPv4 address has four decimal parts separated by dots";
  out[off] = value * 256 + part;
  return null;
}

/**
 * Parses an IPv6 address in `text[start, end)` into `out[off .. off+4)`: 1..4 hex digits per
 * group, one `::` for a run of zero groups, upper or lower case, and an IPv4 dotted quad as
 * the last 32 bits (`::ffff:1.2.3.4`). Zone ids (`%eth0`) are not addresses of a route.
 * Groups are written straight into place (group k is half of word k >> 1); at `::` the groups
 * that follow are counted first so the parser knows where they go. No allocation.
 */
export function parseIPv6Into(text: string, start: number, end: number, out: Uint32Array, off: number): string | null {
  let k = 0; // index of the next group, 0..8
  let gapSeen = false;
  let i = start;
  if (end - start >= 2 && text.charCodeAt(i) === 58 && text.charCodeAt(i + 1) === 58) {
    const jump = skipZeroGroups(text, i + 2, end, out, off, 0);
    if (jump < 0) return "an IPv6 address with :: has at most 7 groups";
    k = jump;
    gapSeen = true;
    i += 2;
  }
  while (i < end) {
    const groupStart = i;
    let value = 0;
    let digits = 0;
    let c = 0;
    for (; i < end; i++) {
      c = text.charCodeAt(i);
      let h: number;
      if (c >= 48 && c <= 57) h = c - 48;
      else if ((c | 32) >= 97 && (c | 32) <= 102) h = (c | 32) - 87;
      else break;
      value = value * 16 + h;
      digits++;
    }
    if (i < end && c === 46) {
      // Embedded IPv4: the rest of the text is a dotted quad filling the last two groups.
      if (k !== 6) return gapSeen ? "an IPv6 address with :: has at most 7 groups" : "an IPv6 address has 8 groups, or fewer with ::";
      const reason = parseIPv4Into(text, groupStart, end, out, off + 3);
      if (reason !== null) return `embedded IPv4: ${reason}`;
      return null;
    }
    if (digits === 0) return i < end && c !== 58 ? unexpected(text, i) : "an IPv6 group is empty (use :: once for zeros)";
    if (digits > 4) return "an IPv6 group has at most 4 hex digits";
    if (k === 8) return "an IPv6 address has at most 8 groups";
    if ((k & 1) === 0) out[off + (k >>> 1)] = value * 65536;
    else out[off + (k >>> 1)] = out[off + (k >>> 1)]! + value;
    k++;
    if (i === end) break;
    if (c !== 58) return unexpected(text, i);
    i++;
    if (i < end && text.charCodeAt(i) === 58) {
      if (gapSeen) return ":: may appear only once in an IPv6 address";
      const jump = skipZeroGroups(text, i + 1, end, out, off, k);
      if (jump < 0) return "an IPv6 address with :: has at most 7 groups";
      k = jump;
      gapSeen = true;
      i++;
    } else if (i === end) {
      return "an IPv6 address cannot end with a single colon";
    }
  }
  if (k !== 8) return "an IPv6 address has 8 groups, or fewer with ::";
  return null;
}

/**
 * At a `::` before text[from], with k groups written: zeroes the groups that `::` stands for
 * (at least one) and returns the index of the group after them, or -1 when the rest of the
 * text already has 8 - k groups or more.
 */
function skipZeroGroups(text: string, from: number, end: number, out: Uint32Array, off: number, k: number): number {
  let tail = 0;
  if (from < end) {
    tail = 1;
    for (let j = from; j < end; j++) {
      const c = text.charCodeAt(j);
      if (c === 58) tail++;
      else if (c === 46) {
        tail++; // a dotted quad is two groups
        break;
      }
    }
  }
  const next = 8 - tail;
  if (next <= k) return -1;
  for (let z = k; z < next; z++) {
    if ((z & 1) === 0) out[off + (z >>> 1)] = 0;
  }
  return next;
}

function unexpected(text: string, i: number): string {
  const c = text.charCodeAt(i);
  if (c === 32 || c === 9 || c === 10 || c === 13) return "spaces are not allowed";
  return `unexpected character ${JSON.stringify(text[i])}`;
}

const OCTET = Array.from({ length: 256 }, (_, i) => String(i));
const OCTET_DOT = Array.from({ length: 256 }, (_, i) => `${i}.`);

/** Dotted-quad text of the IPv4 address in `words[off]`. */
export function formatIPv4(words: ArrayLike<number>, off: number): string {
  const v = words[off]!;
  return OCTET_DOT[v >>> 24]! + OCTET_DOT[(v >>> 16) & 255]! + OCTET_DOT[(v >>> 8) & 255]! + OCTET[v & 255]!;
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16));
const HEX2 = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));
const HEX_CHAR = Uint8Array.from("0123456789abcdef", (c) => c.charCodeAt(0));

function group(words: ArrayLike<number>, off: number, k: number): number {
  const v = words[off + (k >>> 1)]!;
  return (k & 1) === 0 ? v >>> 16 : v & 0xffff;
}

function hexGroup(g: number): string {
  const hi = g >>> 8;
  return hi === 0 ? HEX[g]! : HEX[hi]! + HEX2[g & 255]!;
}

/** True for an IPv4-mapped address (::ffff:0:0/96), which RFC 5952 section 5 writes dotted. */
function isMapped(words: ArrayLike<number>, off: number): boolean {
  return words[off] === 0 && words[off + 1] === 0 && words[off + 2] === 0xffff;
}

/**
 * The run of zero groups that `::` replaces: the longest of two or more (the first of equals),
 * as start * 16 + length, or -1 when there is none (a single zero group is never compressed).
 */
function zeroRun(words: ArrayLike<number>, off: number): number {
  let bestAt = -1;
  let bestLen = 1;
  for (let k = 0; k < 8; ) {
    if (group(words, off, k) !== 0) {
      k++;
      continue;
    }
    let j = k + 1;
    while (j < 8 && group(words, off, j) === 0) j++;
    if (j - k > bestLen) {
      bestAt = k;
      bestLen = j - k;
    }
    k = j;
  }
  return bestAt < 0 ? -1 : bestAt * 16 + bestLen;
}

/**
 * RFC 5952 text of the IPv6 address in `words[off .. off+4)`: lower case, no leading zeros, the
 * longest run of two or more zero groups (the first of equals) as `::`, and an IPv4-mapped
 * address (`::ffff:0:0/96`) with its last 32 bits as a dotted quad (section 5).
 */
export function formatIPv6(words: ArrayLike<number>, off: number): string {
  if (isMapped(words, off)) return `::ffff:${formatIPv4(words, off + 3)}`;
  const run = zeroRun(words, off);
  const at = run < 0 ? -1 : run >>> 4;
  let text = "";
  for (let k = 0; k < 8; k++) {
    if (k === at) {
      text += "::";
      k += (run & 15) - 1;
      continue;
    }
    text += hexGroup(group(words, off, k));
    if (k !== 7 && k + 1 !== at) text += ":";
  }
  return text;
}

/** Writes the ASCII decimal digits of 0 <= x <= 999 at buf[pos]; returns the next position. */
export function writeDecimal(buf: Uint8Array, pos: number, x: number): number {
  if (x >= 100) buf[pos++] = 48 + ((x / 100) | 0);
  if (x >= 10) buf[pos++] = 48 + (((x / 10) | 0) % 10);
  buf[pos++] = 48 + (x % 10);
  return pos;
}

/** formatIPv4 into ASCII bytes at buf[pos] (at most 15); returns the next position. */
export function writeIPv4(words: ArrayLike<number>, off: number, buf: Uint8Array, pos: number): number {
  const v = words[off]!;
  pos = writeDecimal(buf, pos, v >>> 24);
  buf[pos++] = 46;
  pos = writeDecimal(buf, pos, (v >>> 16) & 255);
  buf[pos++] = 46;
  pos = writeDecimal(buf, pos, (v >>> 8) & 255);
  buf[pos++] = 46;
  return writeDecimal(buf, pos, v & 255);
}

/** formatIPv6 into ASCII bytes at buf[pos] (at most 39); returns the next position. */
export function writeIPv6(words: ArrayLike<number>, off: number, buf: Uint8Array, pos: number): number {
  if (isMapped(words, off)) {
    for (const c of [58, 58, 102, 102, 102, 102, 58]) buf[pos++] = c; // "::ffff:"
    return writeIPv4(words, off + 3, buf, pos);
  }
  const run = zeroRun(words, off);
  const at = run < 0 ? -1 : run >>> 4;
  for (let k = 0; k < 8; k++) {
    if (k === at) {
      buf[pos++] = 58;
      buf[pos++] = 58;
      k += (run & 15) - 1;
      continue;
    }
    const g = group(words, off, k);
    if (g >= 0x1000) buf[pos++] = HEX_CHAR[g >>> 12]!;
    if (g >= 0x100) buf[pos++] = HEX_CHAR[(g >>> 8) & 15]!;
    if (g >= 0x10) buf[pos++] = HEX_CHAR[(g >>> 4) & 15]!;
    buf[pos++] = HEX_CHAR[g & 15]!;
    if (k !== 7 && k + 1 !== at) buf[pos++] = 58;
  }
  return pos;
}
