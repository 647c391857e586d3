import type { ChunkedSection, SectionChunk } from "./chunked-section.js";

// Compaction of a chunked section (chunked-section.ts), for the agent's quiet moment after a sync.

/**
 * The chunks left in buffers that hold less than half their size of the section copied into one
 * new buffer and array each, once deltas have rebuilt more than `slack` bytes of chunks since the
 * last look: chunks rebuilt delta after delta leave parts of older buffers (the full bundle's,
 * earlier deltas') held for the few chunks still in them. A buffer whose chunks were all rebuilt
 * since is already gone, and one still mostly in use (the full bundle's, for a long while) is let
 * be; every buffer then holds at least half of its size of the section, so the section holds
 * less than twice its bytes (and `slack`). The chunks are changed in place, views of the new
 * buffers, so every section sharing them reads the same lines as before. Answers whether it
 * copied. For a quiet moment: it costs a look at each chunk, and the copy of what it moves.
 */
export function compactSection(section: ChunkedSection, slack = 1 << 20): boolean {
  if (section.rebuilt <= slack) return false;
  section.rebuilt = 0;
  // What each buffer holds of this section: the chunks of one buffer share its Buffer object (and
  // their columns are in the arrays made with it).
  const live = new Map<Buffer, number>();
  for (let i = 0; i < section.chunks.length; i++) {
    const c = section.chunks[i] as SectionChunk;
    live.set(c.bytes, (live.get(c.bytes) ?? 0) + (c.starts[c.count] as number) - (c.starts[0] as number));
  }
  const chunks = section.chunks.filter((c) => (live.get(c.bytes) as number) * 2 < c.bytes.length);
  if (chunks.length === 0) return false;
  let count = 0;
  let size = 0;
  let digestBytes = 0;
  for (const c of chunks) {
    count += c.count;
    size += (c.starts[c.count] as number) - (c.starts[0] as number);
    digestBytes += c.digests.length;
  }
  const bytes = Buffer.allocUnsafeSlow(size);
  const starts = new Uint32Array(count + chunks.length);
  const prefixLength = new Uint8Array(count);
  const tagOf = new Uint32Array(count);
  const pageEnd = new Uint8Array(count);
  const digests = Buffer.allocUnsafeSlow(digestBytes);
  let at = 0;
  let line = 0;
  let startAt = 0;
  let digestAt = 0;
  for (const c of chunks) {
    const from = c.starts[0] as number;
    const shift = at - from;
    at += c.bytes.copy(bytes, at, from, c.starts[c.count] as number);
    const s = starts.subarray(startAt, startAt + c.count + 1);
    for (let j = 0; j <= c.count; j++) s[j] = (c.starts[j] as number) + shift;
    prefixLength.set(c.prefixLength, line);
    tagOf.set(c.tagOf, line);
    pageEnd.set(c.pageEnd, line);
    digestAt += c.digests.copy(digests, digestAt);
    c.bytes = bytes;
    c.starts = s;
    c.prefixLength = prefixLength.subarray(line, line + c.count);
    c.tagOf = tagOf.subarray(line, line + c.count);
    c.pageEnd = pageEnd.subarray(line, line + c.count);
    c.digests = digests.subarray(digestAt - c.digests.length, digestAt);
    line += c.count;
    startAt += c.count + 1;
  }
  return true;
}
