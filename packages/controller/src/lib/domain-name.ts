import { domainToASCII, domainToUnicode } from "node:url";
import { accept, refuse, type ValueResult } from "./value-result.js";

// ASCII characters a domain may be written with. Everything else ASCII is refused before
// `domainToASCII`, which parses a URL host: it would read `a/b.com` as `a`, decode `%41`, and
// turn `0x7f.1` into an IPv4 address. Non-ASCII characters are left to IDNA (UTS 46).
const ASCII_ALLOWED = /^[A-Za-z0-9.-]*$/;
const NON_ASCII = /[^\x00-\x7f]/g;
const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const ALL_DIGITS = /^[0-9]+$/;

/**
 * A domain entry's name: lower case, one trailing dot removed, IDN to punycode (`bücher.example`
 * → `xn--bcher-kva.example`); labels 1..63 letters, digits and hyphens, not starting or ending
 * with a hyphen; at most 253 characters; at least two labels; a top label that is not all digits
 * (so an IPv4 address is never taken for a name).
 */
export function normaliseDomain(input: string): ValueResult<string> {
  let text = input.trim();
  if (text.startsWith("*.")) return refuse("wildcards are not names: write the parent domain with include_subdomains: true");
  if (text.endsWith(".")) text = text.slice(0, -1);
  if (text === "") return refuse("the domain is empty");
  if (!ASCII_ALLOWED.test(text.replace(NON_ASCII, ""))) {
    return refuse("a domain may contain only letters, digits, hyphens and dots");
  }
  const top = text.slice(text.lastIndexOf(".") + 1);
  if (ALL_DIGITS.test(top)) return refuse("the top-level label is all digits: an IP address is not a domain");
  // Also checks punycode labels (`xn--zz` is refused) and lower-cases.
  const ascii = domainToASCII(text);
  if (ascii === "") return refuse("not a valid internationalised domain name");
  if (ascii.length > 253) return refuse("the name is longer than 253 characters");
  const labels = ascii.split(".");
  if (labels.length < 2) return refuse("a domain needs at least two labels (example.com)");
  for (const label of labels) {
    if (label === "") return refuse("a label is empty (two dots in a row, or a leading dot)");
    if (label.length > 63) return refuse(`label "${label.slice(0, 20)}…" is longer than 63 characters`);
    if (!LABEL.test(label)) return refuse(`label "${label}" must be letters, digits and hyphens, not starting or ending with a hyphen`);
    // Node 20's domainToASCII refuses a punycode label that does not decode (`xn--zz`); Node 22
    // and 24 keep it as it is. A label that decodes to itself, or to nothing, is not punycode.
    if (label.startsWith("xn--")) {
      const decoded = domainToUnicode(label);
      if (decoded === "" || decoded.startsWith("xn--")) return refuse("not a valid internationalised domain name");
    }
  }
  if (ALL_DIGITS.test(labels[labels.length - 1]!)) return refuse("the top-level label is all digits: an IP address is not a domain");
  return accept(ascii);
}
