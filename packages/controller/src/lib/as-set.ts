import { normaliseAsn } from "./asn.js";
import { accept, refuse, type ValueResult } from "./value-result.js";

// RPSL as-set names (RFC 2622 §5.1): `AS-` and letters, digits, `_` or `-`, or a hierarchical
// name whose components are ASNs or such names, at least one of them a set (`AS64500:AS-CUSTOMERS`).
// IRRd also takes `SOURCE::NAME` to look the set up in that one source, as bgpq4 does.
const SET_COMPONENT = /^AS-[A-Z0-9_-]+$/;
const ASN_COMPONENT = /^AS\d{1,10}$/;
const SOURCE = /^[A-Z][A-Z0-9_-]{0,31}$/;

/** An AS-SET name, upper case (IRR names are case-insensitive); its IRR source kept when pinned. */
export function normaliseAsSet(input: string): ValueResult<string> {
  const text = input.trim().toUpperCase();
  const quoted = `"${input.trim().slice(0, 60)}"`;
  if (text.length < 4 || text.length > 255) return refuse(`${quoted} is not an AS-SET name: write AS-EXAMPLE, AS64500:AS-CUSTOMERS or RIPE::AS-EXAMPLE`);
  const at = text.indexOf("::");
  const source = at === -1 ? null : text.slice(0, at);
  const name = at === -1 ? text : text.slice(at + 2);
  if (source !== null && !SOURCE.test(source)) return refuse(`${quoted}: the IRR source before :: must be a source name such as RIPE or RADB`);
  const parts = name.split(":");
  const ok = parts.every((p) => SET_COMPONENT.test(p) || ASN_COMPONENT.test(p)) && parts.some((p) => SET_COMPONENT.test(p));
  if (!ok) return refuse(`${quoted} is not an AS-SET name: write AS-EXAMPLE, AS64500:AS-CUSTOMERS or RIPE::AS-EXAMPLE`);
  return accept(text);
}

/** A CSV cell of an AS module: an ASN (`13335`, `AS13335`) or an AS-SET name. */
export function normaliseAsnOrSet(input: number | string): ValueResult<number | string> {
  if (typeof input === "number") return normaliseAsn(input);
  const asn = normaliseAsn(input);
  if (asn.ok) return asn;
  if (/^\s*(?:as)?\d+\s*$/i.test(input)) return asn;
  const set = normaliseAsSet(input);
  return set.ok ? set : refuse(`"${input.trim().slice(0, 40)}" is neither an ASN (13335, AS13335) nor an AS-SET (AS-EXAMPLE)`);
}
