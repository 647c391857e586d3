import { z } from "zod";

/**
 * A string a PostgreSQL text column can hold: NUL is the one character it refuses, and it
 * would otherwise surface as a 500 at insert time.
 */
export const storableText = () => z.string().regex(/^[^\0]*$/, "must not contain NUL characters");

/**
 * One line of plain text: no C0/C1 control characters (newline, CR, escape, DEL…) and no Unicode
 * line or paragraph separator. What an agent says about itself lands in audit summaries and
 * logs, where a newline would forge a line of its own.
 */
export const singleLineText = () => z.string().regex(/^[^\u0000-\u001f\u007f-\u009f\u2028\u2029]*$/, "must be one line without control characters");

/** A name a client gives (a module, a maintenance policy): trimmed, 1..max characters, no control characters. */
export const nameText = (max: number) =>
  z
    .string()
    .trim()
    .min(1)
    .max(max)
    .regex(/^[^\p{Cc}]*$/u, "must not contain control characters");

/** Text a client must give (a URL, a domain, a value to parse): 1..max characters. */
export const nonEmptyText = (max: number) => z.string().min(1).max(max);
