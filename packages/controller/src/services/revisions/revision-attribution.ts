import { compareWords, lastAddress, type PrefixTable } from "@rlc/shared/prefix";

/*
 * Which modules each announced prefix stands for (`module_ids` of a revision's prefixes). Module
 * m is attributed to announced prefix o when
 *   (a) some prefix q of m contains o whole (q ⊇ o), or
 *   (b) o is the longest announced prefix that contains some prefix q of m whole ("q inside o
 *       is routed by o"; when q is announced itself that is q, and (a) already holds).
 * The module prefixes are the collected ones after the bogon filter, not aggregated.
 *
 * Two CIDR blocks are either nested or disjoint, so one walk over both lists merged in
 * address-then-length order, holding the chain of open blocks, sees every pair: at each
 * distinct prefix p the chain holds exactly the blocks that contain p. Each chain level keeps
 * the module bits of the module prefixes at or above it, and the innermost announced prefix at
 * or above it; (a) ORs the level's bits into o's mask, (b) ORs q's module bit into the mask of
 * the innermost announced prefix above q. Linear after the sorts; one bitmask of
 * ceil(modules/32) words per announced prefix, no object per prefix.
 * Measured on 1.1M module prefixes and 1M announced ones: 76-137 ms. The version it replaces
 * (an item object per module prefix, a Map of a Set per announced prefix, two longest-match
 * indexes, a sort per prefix) took ~6 s of the 8.8 s that buildRevision took then.
 */
export function attributeModules(modulePrefixes: PrefixTable, moduleOf: Uint32Array, announced: PrefixTable, moduleCount: number): Uint32Array {
  const W = announced.W;
  const MW = Math.max(1, Math.ceil(moduleCount / 32));
  const masks = new Uint32Array(announced.count * MW);
  const MAX = 130; // a chain holds at most one prefix of each length
  const levelLast = new Uint32Array(MAX * W);
  const levelBits = new Uint32Array(MAX * MW);
  const levelOut = new Int32Array(MAX);
  const last = new Uint32Array(W);
  const q = modulePrefixes;
  const o = announced;
  let depth = 0;
  let i = 0;
  let j = 0;
  while (i < q.count || j < o.count) {
    let cmp: number;
    if (i >= q.count) cmp = 1;
    else if (j >= o.count) cmp = -1;
    else cmp = compareWords(q.words, i * W, o.words, j * W, W) || q.lens[i]! - o.lens[j]!;
    const words = cmp <= 0 ? q.words : o.words;
    const at = (cmp <= 0 ? i : j) * W;
    const len = cmp <= 0 ? q.lens[i]! : o.lens[j]!;

    // Close the levels that do not contain p: p starts after their last address.
    while (depth > 0 && compareWords(words, at, levelLast, (depth - 1) * W, W) > 0) depth--;
    const lvl = depth++;
    lastAddress(words, at, len, W, last);
    levelLast.set(last, lvl * W);
    if (lvl > 0) levelBits.copyWithin(lvl * MW, (lvl - 1) * MW, lvl * MW);
    else levelBits.fill(0, 0, MW);
    levelOut[lvl] = lvl > 0 ? levelOut[lvl - 1]! : -1;

    const qFirst = i;
    if (cmp <= 0) {
      // Every module prefix equal to p (sorted by module after address and length).
      while (i < q.count && q.lens[i] === len && compareWords(q.words, i * W, words, at, W) === 0) {
        const m = moduleOf[i++]!;
        levelBits[lvl * MW + (m >>> 5)]! |= 1 << (m & 31);
      }
    }
    if (cmp >= 0) {
      const out = j++;
      for (let w = 0; w < MW; w++) masks[out * MW + w]! |= levelBits[lvl * MW + w]!; // (a)
      levelOut[lvl] = out;
    } else if (levelOut[lvl]! >= 0) {
      const out = levelOut[lvl]!; // (b): the innermost announced prefix containing p
      for (let k = qFirst; k < i; k++) {
        const m = moduleOf[k]!;
        masks[out * MW + (m >>> 5)]! |= 1 << (m & 31);
      }
    }
  }
  return masks;
}

/** The module indexes set in mask `index` (ascending). */
export function maskModules(masks: Uint32Array, index: number, moduleCount: number): number[] {
  const MW = Math.max(1, Math.ceil(moduleCount / 32));
  const out: number[] = [];
  for (let w = 0; w < MW; w++) {
    let bits = masks[index * MW + w]!;
    while (bits !== 0) {
      const b = 31 - Math.clz32(bits & -bits);
      out.push(w * 32 + b);
      bits &= bits - 1;
    }
  }
  return out;
}
