// The IPv4 ranges of the ASN file index (~412k rows of @ip-location-db/asn): appended row by row
// into typed columns, then laid out per ASN once, and turned into CIDRs as numbers. A JS array
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

  /** Groups the rows by ASN (a counting sort over a map of offsets). */
  private index(): void {
    const { asns, count } = this;
    const first = this.byAsn;
    for (let i = 0; i < count; i++) first.set(asns[i]!, (first.get(asns[i]!) ?? 0) + 1);
    let offset = 0;
    for (const [asn, n] of first) {
      first.set(asn, offset);
      offset += n;
    }
    const next = new Map(first);
    const starts = new Uint32Array(count);
    const ends = new Uint32Array(count);
    for (let i = 0; i < count; i++) {
      const at = next.get(asns[i]!)!;
      starts[at] = this.starts[i]!;
      ends[at] = this.ends[i]!;
      next.set(asns[i]!, at + 1);
    }
    this.runEnds = new Uint32Array(count);
    for (const [asn, end] of next) this.runEnds[first.get(asn)!] = end;
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
