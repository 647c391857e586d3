import { compareWords, lastAddress, type PrefixTable } from "@rlc/shared/prefix";
import type { ModulePairs } from "./revision-input.js";

// The address blocks an incremental rebuild works on (revision-incremental.ts).

/** Blocks of one family: aligned prefixes, sorted, none inside another. */
export class Blocks {
  starts: Uint32Array[] = [];
  lens: number[] = [];
  constructor(readonly W: 1 | 4) {}
  add(words: Uint32Array, at: number, len: number) {
    const w = Uint32Array.from(words.subarray(at, at + this.W));
    maskTo(w, len);
    this.starts.push(w);
    this.lens.push(len);
  }
  /** Sorts, and drops every block inside another. */
  normalize() {
    const order = this.starts.map((_, k) => k).sort((x, y) => compareWords(this.starts[x]!, 0, this.starts[y]!, 0, this.W) || this.lens[x]! - this.lens[y]!);
    const starts: Uint32Array[] = [];
    const lens: number[] = [];
    const last = new Uint32Array(this.W);
    for (const k of order) {
      if (starts.length) {
        lastAddress(starts[starts.length - 1]!, 0, lens[lens.length - 1]!, this.W, last);
        if (compareWords(this.starts[k]!, 0, last, 0, this.W) <= 0) continue; // inside the one before
      }
      starts.push(this.starts[k]!);
      lens.push(this.lens[k]!);
    }
    this.starts = starts;
    this.lens = lens;
  }
}

export function maskTo(w: Uint32Array, len: number) {
  for (let k = 0; k < w.length; k++) {
    const bits = Math.min(32, Math.max(0, len - k * 32));
    w[k] = bits === 0 ? 0 : bits === 32 ? w[k]! : (w[k]! & ~(2 ** (32 - bits) - 1)) >>> 0;
  }
}

/** A prefix as a key: its address masked to `len`, and `len`. */
export function keyOf(words: Uint32Array, len: number): string {
  const w = Uint32Array.from(words);
  maskTo(w, len);
  return `${w.join(".")}/${len}`;
}

/** Keys (keyOf) of the module prefixes and of the last content's prefixes shorter than the block length. */
export function wideKeys(effective: ModulePairs, oldWide: PrefixTable, blockLen: number): Set<string> {
  const e = effective.table;
  const wide = new Set<string>();
  for (let i = 0; i < e.count; i++) if (e.lens[i]! < blockLen) wide.add(keyOf(e.words.subarray(i * e.W, i * e.W + e.W), e.lens[i]!));
  for (let i = 0; i < oldWide.count; i++) wide.add(keyOf(oldWide.words.subarray(i * e.W, i * e.W + e.W), oldWide.lens[i]!));
  return wide;
}

/**
 * Widens each block until no module prefix and no prefix of the last content is shorter than
 * it and overlaps it (contains it): to the widest such prefix.
 */
export function widen(b: Blocks, wide: Set<string>) {
  if (!wide.size) return;
  for (let k = 0; k < b.starts.length; k++) {
    for (let len = 0; len < b.lens[k]!; len++) {
      if (wide.has(keyOf(b.starts[k]!, len))) {
        b.lens[k] = len;
        maskTo(b.starts[k]!, len);
        break;
      }
    }
  }
  b.normalize();
}
