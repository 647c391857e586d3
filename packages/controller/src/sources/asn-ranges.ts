// The ranges of the ASN file index (~412k IPv4 and ~103k IPv6 rows of @ip-location-db/asn):
// appended row by row into typed columns, then grouped by ASN once, and turned into CIDRs on
// lookup (IPv4 as numbers). A JS array per ASN (84k of them, grown push by push) and a bigint per
// range end cost the load ~0.2 s and a 400-ASN refresh ~0.2 s more.

const MAX_LENGTH = 32;

/** Rows of ranges by ASN: the row's ASNs until index(), then each ASN's run of rows. */
abstract class AsnRows {
  protected asns = new Uint32Array(1 << 12);
  protected count = 0;
  /** After index(): ASN → its first row in the columns, grouped by ASN; runEnds[first] the row after its last. */
  private byAsn = new Map<number, number>();
  private runEnds = new Uint32Array(0);
  private indexed = false;

  /** Puts the columns in `order` (row order[i] becomes row i). */
  protected abstract reorder(order: Uint32Array): void;

  /** Room for one more row: the ASN column grown; a subclass grows its own columns with it. */
  protected room(): boolean {
    if (this.count < this.asns.length) return false;
    this.asns = grown(this.asns);
    return true;
  }

  /** The ASNs with a range, each once. */
  keys(): Iterable<number> {
    this.index();
    return this.byAsn.keys();
  }

  /** The rows [from, to) of `asn`, or null. */
  protected runOf(asn: number): [number, number] | null {
    this.index();
    const from = this.byAsn.get(asn);
    return from === undefined ? null : [from, this.runEnds[from]!];
  }

  /** Groups the rows by ASN (groupByAsn), once: the columns in that order, one map entry per ASN. */
  private index(): void {
    if (this.indexed) return;
    const { order, byAsn, runEnds } = groupByAsn(this.asns, this.count);
    this.reorder(order);
    this.byAsn = byAsn;
    this.runEnds = runEnds;
    this.asns = new Uint32Array(0);
    this.indexed = true;
  }
}

export class Ipv4AsnRanges extends AsnRows {
  private starts = new Uint32Array(1 << 12);
  private ends = new Uint32Array(1 << 12);

  /** Adds the range [start, end] (start <= end) of `asn`; only before the first lookup. */
  add(asn: number, start: number, end: number): void {
    if (this.room()) {
      this.starts = grown(this.starts);
      this.ends = grown(this.ends);
    }
    this.starts[this.count] = start;
    this.ends[this.count] = end;
    this.asns[this.count++] = asn;
  }

  protected reorder(order: Uint32Array): void {
    const starts = new Uint32Array(this.count);
    const ends = new Uint32Array(this.count);
    for (let i = 0; i < this.count; i++) {
      starts[i] = this.starts[order[i]!]!;
      ends[i] = this.ends[order[i]!]!;
    }
    this.starts = starts;
    this.ends = ends;
  }

  /**
   * The fewest CIDRs covering each of `asn`'s ranges, all of them sorted by network then length
   * and each text once: canonicalCidrs' order and text for IPv4.
   */
  prefixesOf(asn: number): string[] {
    const run = this.runOf(asn);
    if (!run) return [];
    const [from, to] = run;
    // network * 64 + length: sorts by network then length, and equal CIDRs are equal keys.
    const keys: number[] = [];
    for (let i = from; i < to; i++) appendRangeKeys(this.starts[i]!, this.ends[i]!, keys);
    const sorted = Float64Array.from(keys).sort();
    const out: string[] = [];
    for (let i = 0; i < sorted.length; i++) {
      if (i > 0 && sorted[i] === sorted[i - 1]) continue;
      const key = sorted[i]!;
      const length = key % 64;
      const network = (key - length) / 64;
      out.push(`${network >>> 24}.${(network >>> 16) & 255}.${(network >>> 8) & 255}.${network & 255}/${length}`);
    }
    return out;
  }
}

/**
 * The IPv6 ranges of the index (~103k rows of @ip-location-db/asn), in typed columns as the IPv4
 * ones are: each bound as two 64-bit halves. A bigint a bound and an array an ASN were ~250k
 * objects in the controller's heap for as long as it ran (about a quarter of all of them), which
 * every full collection marked again: a refresh right after a full one paid 30-47 ms of such
 * marking on its thread (bench/refresh-apply.mjs with --trace-gc).
 */
export class Ipv6AsnRanges extends AsnRows {
  /** start high, start low, end high, end low: four a row. */
  private bounds = new BigUint64Array(4 << 12);

  /** Adds the range [start, end] (start <= end, both within 128 bits) of `asn`; only before the first lookup. */
  add(asn: number, start: bigint, end: bigint): void {
    if (this.room()) {
      const bounds = new BigUint64Array(this.bounds.length * 2);
      bounds.set(this.bounds);
      this.bounds = bounds;
    }
    const at = this.count * 4;
    this.bounds[at] = start >> 64n;
    this.bounds[at + 1] = BigInt.asUintN(64, start);
    this.bounds[at + 2] = end >> 64n;
    this.bounds[at + 3] = BigInt.asUintN(64, end);
    this.asns[this.count++] = asn;
  }

  protected reorder(order: Uint32Array): void {
    const bounds = new BigUint64Array(this.count * 4);
    for (let i = 0; i < this.count; i++) bounds.set(this.bounds.subarray(order[i]! * 4, order[i]! * 4 + 4), i * 4);
    this.bounds = bounds;
  }

  /** `asn`'s ranges in the order they were added: start, end, start, end… */
  rangesOf(asn: number): bigint[] {
    const run = this.runOf(asn);
    if (!run) return [];
    const out: bigint[] = [];
    const b = this.bounds;
    for (let i = run[0] * 4; i < run[1] * 4; i += 4) out.push((b[i]! << 64n) | b[i + 1]!, (b[i + 2]! << 64n) | b[i + 3]!);
    return out;
  }
}

/**
 * Rows grouped by ASN: an LSD radix sort of the row numbers by ASN, 16 bits a pass (stable, so
 * an ASN's rows keep their order), then one map entry per ASN, its first position in `order`,
 * with runEnds[first] the position after its last. A count per ASN in a Map took ~0.25 s of the
 * load for 412k rows; this ~20 ms.
 */
function groupByAsn(asns: Uint32Array, count: number): { order: Uint32Array; byAsn: Map<number, number>; runEnds: Uint32Array<ArrayBuffer> } {
  let order = new Uint32Array(count);
  for (let i = 0; i < count; i++) order[i] = i;
  let spare = new Uint32Array(count);
  const buckets = new Uint32Array(65_537);
  for (const shift of [0, 16]) {
    buckets.fill(0);
    for (let i = 0; i < count; i++) buckets[((asns[order[i]!]! >>> shift) & 0xffff) + 1]!++;
    for (let b = 1; b < buckets.length; b++) buckets[b]! += buckets[b - 1]!;
    for (let i = 0; i < count; i++) spare[buckets[(asns[order[i]!]! >>> shift) & 0xffff]!++] = order[i]!;
    [order, spare] = [spare, order];
  }
  const byAsn = new Map<number, number>();
  const runEnds = new Uint32Array(count);
  let from = 0;
  for (let i = 0; i < count; i++) {
    const asn = asns[order[i]!]!;
    if (i + 1 === count || asns[order[i + 1]!] !== asn) {
      byAsn.set(asn, from);
      runEnds[from] = i + 1;
      from = i + 1;
    }
  }
  return { order, byAsn, runEnds };
}

function grown(column: Uint32Array): Uint32Array<ArrayBuffer> {
  const bigger = new Uint32Array(column.length * 2);
  bigger.set(column);
  return bigger;
}

/** Appends the keys of the fewest CIDRs that cover exactly [start, end]: the largest aligned block at each step. */
export function appendRangeKeys(start: number, end: number, out: number[]): void {
  let at = start;
  while (at <= end) {
    // The largest block aligned at `at` (all of the space at 0), halved until it ends by `end`.
    let size = at === 0 ? 2 ** 32 : (at & -at) >>> 0;
    while (at + size - 1 > end) size /= 2;
    out.push(at * 64 + (MAX_LENGTH - Math.log2(size)));
    at += size;
  }
}
