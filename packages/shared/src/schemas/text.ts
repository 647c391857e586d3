import { z } from "zod";

/**
 * A string a PostgreSQL text column can hold: NUL is the one character it refuses, and it
 * would otherwise surface as a 500 at insert time.
 */
export const storableText = () => z.string().regex(/^[^\0]*$/, "must not contain NUL characters");
