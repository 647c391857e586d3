// The IPv4 ranges of the ASN file index (~412k rows of @ip-location-db/asn): appended row by row
// into typed columns, then grouped by ASN once, and turned into CIDRs as numbers. A JS array
// per ASN (84k of them, grown push by push) and a bigint per range end cost the load ~0.2 s and
// a 400-ASN refresh ~0.2 s more.

const MAX_LENGTH = 32;

export class Ipv4AsnRanges {
  private starts = new Uint32Array(1 << 14);
  private ends = new Uint32Array(1 << 14);
  private asns = new Uint32Array(1 << 14);
  private count = 0;
  /** After index(): ASN → its first row in the columns, grouped by ASN; runEnds[first] the row after its last. */
  private byAsn = new Map<number, number>();
  private runEnds = new Uint32Array(0);
  private indexed = false;

  /** Adds the range [start, end] (start <= end) of `asn`; only before index(). */
  add(asn: number, start: number, end: number): void {
    if (this.count === this.asns.length) {
      this.starts = grown(this.starts);
      this.ends = grown(this.ends);
      this.asns = grown(this.asns);
    }
    this.starts[this.count] = start;
    this.ends[this.count] = end;
    this.asns[this.count++] = asn;
  }

  /** The ASNs with a range, each once. */
  keys(): Iterable<number> {
    if (!this.indexed) this.index();
    return this.byAsn.keys();
  }

  /**
   * Groups the rows by ASN: an LSD radix sort of the rows by ASN, 16 bits a pass (stable, so
   * an ASN's rows keep their order), then one map entry per ASN. A count per ASN in a Map took
   * ~0.25 s of the load for 412k rows; this ~20 ms.
   */
  private index(): void {
    const { count } = this;
    let order = new Uint32Array(count);
    for (let i = 0; i < count; i++) order[i] = i;
    let spare = new Uint32Array(count);
    const buckets = new Uint32Array(65_537);
    for (const shift of [0, 16]) {
      buckets.fill(0);
      for (let i = 0; i < count; i++) buckets[((this.asns[order[i]!]! >>> shift) & 0xffff) + 1]!++;
      for (let b = 1; b < buckets.length; b++) buckets[b]! += buckets[b - 1]!;
      for (let i = 0; i < count; i++) spare[buckets[(this.asns[order[i]!]! >>> shift) & 0xffff]!++] = order[i]!;
      [order, spare] = [spare, order];
    }
    const starts = new Uint32Array(count);
    const ends = new Uint32Array(count);
    this.runEnds = new Uint32Array(count);
    let from = 0;
    for (let i = 0; i < count; i++) {
      const row = order[i]!;
      starts[i] = this.starts[row]!;
      ends[i] = this.ends[row]!;
      const asn = this.asns[row]!;
      if (i + 1 === count || this.asns[order[i + 1]!] !== asn) {
        this.byAsn.set(asn, from);
        this.runEnds[from] = i + 1;
        from = i + 1;
      }
    }
    this.starts = starts;
    this.ends = ends;
    this.asns = new Uint32Array(0);
    this.indexed = true;
  }

  /**
   * The fewest CIDRs covering each of `asn`'s ranges, all of them sorted by network then length
   * and each text once: canonicalCidrs' order and text for IPv4.
   */
  prefixesOf(asn: number): string[] {
    if (!this.indexed) this.index();
    const from = this.byAsn.get(asn);
    if (from === undefined) return [];
    const to = this.runEnds[from]!;
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
