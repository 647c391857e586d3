// The small model space that the prefix property tests share (not part of the build):
// 10.0.0.0/24 and 2001:db8::/120, 256 addresses each, so a brute-force model can list every
// address. A model prefix is its family, its offset in the space and its length.
import fc from "fast-check";

export type Fam = 4 | 6;
export interface P {
  fam: Fam;
  off: number;
  len: number;
}

/** The length of the small space of each family. */
export const BASE_LEN = { 4: 24, 6: 120 } as const;
export const blockSize = (p: { fam: Fam; len: number }) => 2 ** (BASE_LEN[p.fam] + 8 - p.len);
export const key = (p: P) => `${p.fam}|${p.off}|${p.len}`;
export const byAddress = (a: P, b: P) => a.fam - b.fam || a.off - b.off || a.len - b.len;
export const contains = (q: P, p: P) => q.fam === p.fam && q.len <= p.len && p.off >= q.off && p.off < q.off + blockSize(q);

/** The text of `p`, with `hostBits` (modulo the block) set in the address. */
export function text(p: P, hostBits = 0): string {
  const at = p.off + (hostBits % blockSize(p));
  return p.fam === 4 ? `10.0.0.${at}/${p.len}` : `2001:db8::${at.toString(16)}/${p.len}`;
}

/** Reads canonical output text of the model space (anything else fails the test). */
export function fromText(t: string): P {
  const v4 = /^10\.0\.0\.(\d+)\/(\d+)$/.exec(t);
  if (v4) return { fam: 4, off: Number(v4[1]), len: Number(v4[2]) };
  const v6 = /^2001:db8::([0-9a-f]*)\/(\d+)$/.exec(t);
  if (v6) return { fam: 6, off: v6[1] === "" ? 0 : Number.parseInt(v6[1]!, 16), len: Number(v6[2]) };
  throw new Error(`not canonical text of the model space: ${t}`);
}

/** Index of an address of the small space in an addressSet. */
export const slot = (fam: Fam, off: number) => (fam === 4 ? off : 256 + off);

/** Every address of `ps`, one byte an address: IPv4 at 0..255, IPv6 at 256..511. */
export function addressSet(ps: readonly P[]): Uint8Array {
  const set = new Uint8Array(512);
  for (const p of ps) for (let a = p.off; a < p.off + blockSize(p); a++) set[slot(p.fam, a)] = 1;
  return set;
}

/** A prefix of the small space, of the families `fam` gives, placed at (the block of) `at`. */
export function smallPrefix(fam = fc.constantFrom<Fam>(4, 6), at: fc.Arbitrary<number> = fc.nat(255)): fc.Arbitrary<P> {
  return fc.record({ fam, rel: fc.integer({ min: 0, max: 8 }), x: at }).map(({ fam, rel, x }) => {
    const len = BASE_LEN[fam] + rel;
    const size = blockSize({ fam, len });
    return { fam, off: x - (x % size), len };
  });
}
