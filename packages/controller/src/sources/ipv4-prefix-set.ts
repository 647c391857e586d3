// A set of IPv4 prefixes as (network, length) pairs in typed arrays, open addressing with linear
// probing: what a feed's distinct prefixes are told by, ~1M of them in a refresh, where a
// Set<string> hashed each line's text and grew a table of pointers the collector had to walk.

export class Ipv4PrefixSet {
  private networks: Uint32Array;
  /** length + 1; 0 marks an empty slot. */
  private lengths: Uint8Array;
  private mask: number;
  private count = 0;

  /**
   * `expected`: about how many prefixes will be added (a feed's lines), so that the table is
   * made at its size once rather than grown from 1024 a doubling at a time (for a 60k-line feed
   * seven rehashes, ~3 ms of its ~20 ms parse). Left out or small: 1024.
   */
  constructor(expected = 0) {
    let size = 1024;
    while (size < 2 * (expected + 1) + 1) size *= 2;
    this.networks = new Uint32Array(size);
    this.lengths = new Uint8Array(size);
    this.mask = size - 1;
  }

  get size(): number {
    return this.count;
  }

  /** Adds the prefix `network`/`length` (host bits clear); true when it was not in the set. */
  add(network: number, length: number): boolean {
    if (2 * (this.count + 1) > this.mask) this.grow();
    const tag = length + 1;
    let slot = slotOf(network, length) & this.mask;
    for (;;) {
      const at = this.lengths[slot]!;
      if (at === 0) {
        this.networks[slot] = network;
        this.lengths[slot] = tag;
        this.count++;
        return true;
      }
      if (at === tag && this.networks[slot] === network) return false;
      slot = (slot + 1) & this.mask;
    }
  }

  private grow(): void {
    const { networks, lengths } = this;
    const size = 2 * lengths.length;
    this.networks = new Uint32Array(size);
    this.lengths = new Uint8Array(size);
    this.mask = size - 1;
    for (let i = 0; i < lengths.length; i++) {
      if (lengths[i] === 0) continue;
      let slot = slotOf(networks[i]!, lengths[i]! - 1) & this.mask;
      while (this.lengths[slot] !== 0) slot = (slot + 1) & this.mask;
      this.networks[slot] = networks[i]!;
      this.lengths[slot] = lengths[i]!;
    }
  }
}

/** A mix of the pair's bits (murmur3's finaliser), so that /24s a few apart spread over the table. */
function slotOf(network: number, length: number): number {
  let h = (network ^ Math.imul(length, 0x9e3779b1)) | 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}
