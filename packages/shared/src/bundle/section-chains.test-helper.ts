import { createHash } from "node:crypto";
import fc from "fast-check";

// Random sections and chains of small edits between them, and rl-prefix-pages/1 written from its
// definition (lines as strings, FNV-1a in BigInt, a hash object a page): the brute-force model
// the page and chunk tests hold the section code to.

/** FNV-1a 32-bit of a string's bytes, the textbook way. */
export function fnv1a(text: string): number {
  let h = 0x811c9dc5n;
  for (const b of Buffer.from(text, "latin1")) h = ((h ^ BigInt(b)) * 0x01000193n) & 0xffffffffn;
  return Number(h);
}

export const sha = (data: string | Buffer) => createHash("sha256").update(data).digest();

/** The pages of a section's body lines: ends as line counts, digests, root. */
export function model(lines: readonly string[]): { ends: number[]; digests: Buffer; root: string } {
  const ends: number[] = [];
  const digests: Buffer[] = [];
  let page = "";
  lines.forEach((line, i) => {
    page += `${line}\n`;
    if ((fnv1a(line) & 63) === 0 || i === lines.length - 1) {
      ends.push(i + 1);
      digests.push(sha(Buffer.from(page, "latin1")));
      page = "";
    }
  });
  const all = Buffer.concat(digests);
  return { ends, digests: all, root: sha(all).toString("hex") };
}

export const COMMUNITIES = ["65000:100", "65000:200", "65000:100,65000:300", ""];
/** A pool of prefixes in revision order: a section is a subset of it, so two sections share most lines. */
export const POOL = Array.from({ length: 3000 }, (_, i) => `10.${i >> 8}.${i & 255}.0/24`).concat(
  Array.from({ length: 500 }, (_, i) => `2001:db8:${(i + 1).toString(16)}::/48`),
);

/** Body lines: each pool prefix in or out, with one of the communities. */
// size "max": fast-check's default size keeps arrays to about ten items, a section of one page.
export const section = fc.array(fc.nat(POOL.length * COMMUNITIES.length - 1), { maxLength: 900, size: "max" }).map((picks) => {
  const chosen = new Map<number, number>();
  for (const x of picks) chosen.set(x % POOL.length, Math.floor(x / POOL.length));
  return [...chosen.keys()].sort((a, b) => a - b).map((p) => `${POOL[p]}\t${COMMUNITIES[chosen.get(p)!]}`);
});

/** A section and a few next ones, each a small change of the one before: drops, re-tags, adds. */
export const edit = (lines: string[], e: { drop: number[]; retag: number[]; add: number[]; cut: number }) => {
  // `cut` drops the last lines: the last page then ends without its cut, where the base's went on.
  const out = new Map(lines.slice(0, Math.max(0, lines.length - e.cut)).map((l) => [l.slice(0, l.indexOf("\t")), l]));
  const keys = [...out.keys()];
  for (const d of e.drop) if (keys.length) out.delete(keys[d % keys.length]!);
  for (const t of e.retag) if (keys.length) out.set(keys[t % keys.length]!, `${keys[t % keys.length]}\t${COMMUNITIES[t % COMMUNITIES.length]}`);
  for (const a of e.add) out.set(POOL[a % POOL.length]!, `${POOL[a % POOL.length]}\t${COMMUNITIES[a % COMMUNITIES.length]}`);
  const order = new Map(POOL.map((p, i) => [p, i]));
  return [...out.keys()].sort((a, b) => order.get(a)! - order.get(b)!).map((k) => out.get(k)!);
};
const edits = fc.record({
  drop: fc.array(fc.nat(), { maxLength: 12, size: "max" }),
  retag: fc.array(fc.nat(), { maxLength: 8, size: "max" }),
  add: fc.array(fc.nat(), { maxLength: 12, size: "max" }),
  cut: fc.oneof(fc.constant(0), fc.nat(70)),
});
/** Either a small edit or a section drawn afresh (then most pages change). */
const step = fc.oneof({ weight: 4, arbitrary: edits.map((e) => ({ e })) }, { weight: 1, arbitrary: section.map((lines) => ({ lines })) });
export const chains = fc.record({ first: section, steps: fc.array(step, { minLength: 1, maxLength: 5 }) });
