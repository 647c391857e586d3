// The lines of a text read in chunks, as node:readline gives them with crlfDelay Infinity (LF,
// CRLF and CR end a line, a CRLF split between two chunks is one end, a last line without an
// end counts, an empty text has none), handed over as a range of the chunk rather than a string
// each: a caller that reads most lines in place (the ASN file index, 500k rows) allocates for
// none of them.

/** Called for each line: it is `text.slice(start, end)`, without its line end. */
export type LineHandler = (text: string, start: number, end: number) => void;

/** Hands every line of `chunks` to `onLine`, in order. */
export async function eachLine(chunks: AsyncIterable<string>, onLine: LineHandler): Promise<void> {
  let rest = "";
  for await (const chunk of chunks) {
    const text = rest === "" ? chunk : rest + chunk;
    rest = text.slice(scanLines(text, false, onLine));
  }
  if (rest !== "") scanLines(rest, true, onLine);
}

/**
 * Hands the ended lines of `text` to `onLine` and answers where the rest starts; with `last`
 * (the end of the input) the rest is a line too. A CR at the very end is not taken for an end
 * until the next chunk says whether an LF follows it.
 */
export function scanLines(text: string, last: boolean, onLine: LineHandler): number {
  const n = text.length;
  let i = 0;
  // Where the next CR is (n when none): CRs are rare, so it is looked for again only once passed.
  let cr = -1;
  while (i < n) {
    if (cr < i) {
      cr = text.indexOf("\r", i);
      if (cr === -1) cr = n;
    }
    let lf = text.indexOf("\n", i);
    if (lf === -1) lf = n;
    if (cr < lf) {
      if (cr === n - 1 && !last) return i;
      onLine(text, i, cr);
      i = cr + (text.charCodeAt(cr + 1) === 10 ? 2 : 1);
    } else if (lf < n) {
      onLine(text, i, lf);
      i = lf + 1;
    } else {
      if (!last) return i;
      onLine(text, i, n);
      return n;
    }
  }
  return n;
}
