// What `bird -p` need not read again: the route lines of a static protocol's file that BIRD
// already parsed when it took the running copy of that file (the validate step, change.ts).

/**
 * `text` with the route lines `running` has too left blank: BIRD parsed those when it took the
 * running file, in the same protocol, so parsing them again tells nothing new. Every other line
 * stays where it was, so the check still sees each protocol, its channel and its filter as they
 * will run, and a refusal names the line of the real file.
 *
 * Half a million lines each side, in the same order but for what changed: each line is compared
 * character by character with the running file's next lines (`lookahead` of them), so a sparse
 * change costs one pass over both texts. After `misses` route lines in a row found nowhere near,
 * the running file's route lines go into a table by hash and every later line is looked up
 * there. No string is made a line (a Set of split lines took about a second).
 */
export function linesToCheck(text: string, running: string, tuning: { lookahead?: number; misses?: number } = {}): string {
  const lookahead = tuning.lookahead ?? 32;
  const maxMisses = tuning.misses ?? 64;
  // An unchanged file: every route line is one BIRD runs, and there is nothing to compare.
  const same = text === running;
  let table: LineTable | null = null;
  let misses = 0;
  /** Where the running file's next line starts (past its end: none left). */
  let next = 0;
  const out: string[] = [];
  /** Where the run of lines kept as they are starts, and how many blank lines wait to be written. */
  let keptFrom = 0;
  let blanks = 0;
  for (let at = 0; at <= text.length; ) {
    let end = text.indexOf("\n", at);
    if (end < 0) end = text.length;
    let known = false;
    if (isRouteLine(text, at, end)) {
      if (same) known = true;
      else if (table) known = table.has(text, at, end);
      else {
        const found = findNear(running, next, lookahead, text, at, end);
        if (found >= 0) {
          known = true;
          misses = 0;
          next = found;
        } else if (++misses > maxMisses) {
          table = new LineTable(running);
          known = table.has(text, at, end);
        }
      }
    } else if (!table && !same) {
      // A line of the protocol around the routes: the running file's copy of it is passed by too.
      const found = findNear(running, next, lookahead, text, at, end);
      if (found >= 0) next = found;
    }
    if (known) {
      if (keptFrom < at) {
        if (blanks > 0) out.push("\n".repeat(blanks));
        blanks = 0;
        out.push(text.slice(keptFrom, at));
      }
      // The line goes, its newline stays (the last line has none).
      if (end < text.length) blanks++;
      keptFrom = end + 1;
    }
    at = end + 1;
  }
  if (blanks > 0) out.push("\n".repeat(blanks));
  if (keptFrom < text.length) out.push(text.slice(keptFrom));
  return out.join("");
}

/**
 * Among the `lines` lines of `s` from `from`, the one equal to `t[at, end)`: where the line after
 * it starts, or -1.
 */
function findNear(s: string, from: number, lines: number, t: string, at: number, end: number): number {
  const length = end - at;
  for (let k = 0, p = from; k < lines && p <= s.length; k++) {
    let e = s.indexOf("\n", p);
    if (e < 0) e = s.length;
    if (e - p === length) {
      let i = 0;
      while (i < length && s.charCodeAt(p + i) === t.charCodeAt(at + i)) i++;
      if (i === length) return e + 1;
    }
    p = e + 1;
  }
  return -1;
}

/** `route` after the line's leading blanks, then a blank: a static route statement. */
function isRouteLine(s: string, at: number, end: number): boolean {
  let i = at;
  while (i < end && (s.charCodeAt(i) === 32 || s.charCodeAt(i) === 9)) i++;
  if (!s.startsWith("route", i) || i + 5 >= end) return false;
  const c = s.charCodeAt(i + 5);
  return c === 32 || c === 9;
}

function hashLine(s: string, at: number, end: number): number {
  let h = 0x811c9dc5;
  for (let i = at; i < end; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** The route lines of one text, found by their characters (open addressing over their offsets). */
class LineTable {
  readonly #s: string;
  readonly #mask: number;
  /** Offset + 1 of a line's start (0: empty slot), its end, and its hash. */
  readonly #start: Int32Array;
  readonly #end: Int32Array;
  readonly #hash: Uint32Array;

  constructor(s: string) {
    this.#s = s;
    let lines = 1;
    for (let i = s.indexOf("\n"); i >= 0; i = s.indexOf("\n", i + 1)) lines++;
    let size = 16;
    while (size < lines * 2) size *= 2;
    this.#mask = size - 1;
    this.#start = new Int32Array(size);
    this.#end = new Int32Array(size);
    this.#hash = new Uint32Array(size);
    for (let at = 0; at <= s.length; ) {
      let end = s.indexOf("\n", at);
      if (end < 0) end = s.length;
      if (isRouteLine(s, at, end)) this.#add(at, end);
      at = end + 1;
    }
  }

  #add(at: number, end: number): void {
    const h = hashLine(this.#s, at, end);
    let slot = h & this.#mask;
    while (this.#start[slot] !== 0) slot = (slot + 1) & this.#mask;
    this.#start[slot] = at + 1;
    this.#end[slot] = end;
    this.#hash[slot] = h;
  }

  /** Whether the line `t[at, end)` is one of this text's route lines, character for character. */
  has(t: string, at: number, end: number): boolean {
    const h = hashLine(t, at, end);
    const length = end - at;
    for (let slot = h & this.#mask; this.#start[slot] !== 0; slot = (slot + 1) & this.#mask) {
      if (this.#hash[slot] !== h) continue;
      const from = this.#start[slot]! - 1;
      if (this.#end[slot]! - from !== length) continue;
      let k = 0;
      while (k < length && this.#s.charCodeAt(from + k) === t.charCodeAt(at + k)) k++;
      if (k === length) return true;
    }
    return false;
  }
}
