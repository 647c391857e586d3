import { accept, refuse, type ValueResult } from "./value-result.js";

const MAX_ASN = 4294967295;
const ASN_TEXT = /^(?:as)?(\d{1,10})$/i;

/** An ASN as a number or as `13335` / `AS13335` / `as13335` text; 1..4294967295. */
export function normaliseAsn(input: number | string): ValueResult<number> {
  let value: number;
  if (typeof input === "number") {
    value = input;
  } else {
    const m = ASN_TEXT.exec(input.trim());
    if (!m) return refuse(`"${input.slice(0, 40)}" is not an ASN: write 13335 or AS13335`);
    value = Number(m[1]);
  }
  if (!Number.isInteger(value) || value < 1 || value > MAX_ASN) return refuse(`ASN must be 1..${MAX_ASN}`);
  return accept(value);
}
