// RFC 4180 CSV: a parser that reports each record with the line it starts on (quoted fields may
// span lines), and the field quoting of the writer. Pure: no I/O.

export interface CsvRecord {
  /** Line of the record's first character; the first line of the text is 1. */
  line: number;
  fields: string[];
}

export interface CsvBadRecord {
  line: number;
  /** The record's text up to the problem, for the error list. */
  raw: string;
  message: string;
}

const NEEDS_QUOTES = /[",\r\n]/;

/**
 * A cell a spreadsheet would run as a formula (OWASP's CSV injection list: `=`, `+`, `-`, `@`,
 * tab, CR). Leading quotes are looked through, so that a cell which already begins with `'`
 * followed by one of these is escaped too and the import's unescape stays its exact inverse.
 */
const FORMULA = /^'*[=+\-@\t\r]/;
/** What the import refuses: the same characters, first, without the escaping quote. */
const FORMULA_UNESCAPED = /^[=+\-@\t\r]/;
const ESCAPED = /^'+[=+\-@\t\r]/;

/** A cell with one `'` in front when a spreadsheet would otherwise read it as a formula. */
export function escapeFormula(value: string): string {
  return FORMULA.test(value) ? `'${value}` : value;
}

/** The inverse of escapeFormula on a cell it escaped; other cells unchanged. */
export function unescapeFormula(value: string): string {
  return ESCAPED.test(value) ? value.slice(1) : value;
}

/** True for a cell that starts like a formula without the escaping quote. */
export function looksLikeFormula(value: string): boolean {
  return FORMULA_UNESCAPED.test(value);
}

/** One field, quoted only when it must be (a comma, a quote, CR or LF inside). */
export function csvField(value: string): string {
  return NEEDS_QUOTES.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

/** One record with its CRLF line end (RFC 4180 2.1); every cell escaped against formulas. */
export function csvRow(fields: readonly string[]): string {
  return `${fields.map((f) => csvField(escapeFormula(f))).join(",")}\r\n`;
}

/**
 * Records of `text` in order; CRLF, LF and a missing final line end are all accepted, a leading
 * BOM is skipped, and lines that are wholly empty are skipped (they carry no record). A record
 * with a stray quote is reported as bad and parsing goes on at the next line; an unterminated
 * quoted field ends the text.
 */
export function* parseCsv(text: string): Generator<CsvRecord | CsvBadRecord> {
  let pos = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  let line = 1;
  const n = text.length;
  // The next quote at or after pos, kept so that a text without quotes is scanned once.
  let quoteAt = text.indexOf('"', pos);
  while (pos < n) {
    if (quoteAt !== -1 && quoteAt < pos) quoteAt = text.indexOf('"', pos);
    const nl = text.indexOf("\n", pos);
    const end = nl === -1 ? n : nl;
    const lineEnd = end > pos && text.charCodeAt(end - 1) === 13 ? end - 1 : end;
    const next = nl === -1 ? n : nl + 1;
    if (quoteAt === -1 || quoteAt >= end) {
      // Fast path: no quote on this line.
      if (lineEnd > pos) yield { line, fields: text.slice(pos, lineEnd).split(",") };
      pos = next;
      line++;
      continue;
    }
    const parsed = parseQuotedRecord(text, pos, line);
    yield parsed.record;
    if (parsed.next === -1) return;
    pos = parsed.next;
    line = parsed.nextLine;
  }
}

function parseQuotedRecord(text: string, start: number, line: number): { record: CsvRecord | CsvBadRecord; next: number; nextLine: number } {
  const n = text.length;
  const fields: string[] = [];
  let pos = start;
  let lines = 0;
  const skipLine = (message: string) => {
    const nl = text.indexOf("\n", pos);
    const rawEnd = nl === -1 ? n : nl;
    return {
      record: { line, raw: text.slice(start, rawEnd).replace(/\r$/, "").slice(0, 200), message },
      next: nl === -1 ? n : nl + 1,
      nextLine: line + lines + 1,
    };
  };
  for (;;) {
    if (text.charCodeAt(pos) === 34) {
      // Quoted field: "" is a quote; it ends at a quote followed by , or a line end.
      let value = "";
      let from = pos + 1;
      for (;;) {
        const q = text.indexOf('"', from);
        if (q === -1) {
          return { record: { line, raw: text.slice(start, start + 200), message: "a quoted field is not closed" }, next: -1, nextLine: 0 };
        }
        const chunk = text.slice(from, q);
        for (let i = chunk.indexOf("\n"); i !== -1; i = chunk.indexOf("\n", i + 1)) lines++;
        value += chunk;
        if (text.charCodeAt(q + 1) === 34) {
          value += '"';
          from = q + 2;
          continue;
        }
        pos = q + 1;
        break;
      }
      fields.push(value);
    } else {
      let i = pos;
      while (i < n) {
        const c = text.charCodeAt(i);
        if (c === 44 || c === 10 || (c === 13 && text.charCodeAt(i + 1) === 10)) break;
        if (c === 34) return skipLine("a quote inside an unquoted field (quote the whole field and double the quote)");
        i++;
      }
      fields.push(text.slice(pos, i));
      pos = i;
    }
    const c = text.charCodeAt(pos);
    if (c === 44) {
      pos++;
      continue;
    }
    if (pos >= n) return { record: { line, fields }, next: n, nextLine: line + lines + 1 };
    if (c === 10) return { record: { line, fields }, next: pos + 1, nextLine: line + lines + 1 };
    if (c === 13 && text.charCodeAt(pos + 1) === 10) return { record: { line, fields }, next: pos + 2, nextLine: line + lines + 1 };
    return skipLine("a quoted field must be followed by a comma or the end of the line");
  }
}

export function isBadRecord(r: CsvRecord | CsvBadRecord): r is CsvBadRecord {
  return "message" in r;
}
