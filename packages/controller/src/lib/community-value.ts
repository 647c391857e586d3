import { accept, refuse, type ValueResult } from "./value-result.js";

const COMMUNITY = /^(\d{1,20}):(\d{1,20})(?::(\d{1,20}))?$/;
const MAX16 = 65535;
const MAX32 = 4294967295;

/**
 * A BGP community: standard `ASN:VALUE`, each 0..65535, or large `ASN:V1:V2`, each 0..4294967295;
 * canonical without leading zeros (`065000:0100` → `65000:100`).
 */
export function normaliseCommunity(input: string): ValueResult<string> {
  const m = COMMUNITY.exec(input.trim());
  if (!m) return refuse("a community is ASN:VALUE (standard) or ASN:V1:V2 (large), decimal numbers");
  const parts = [m[1]!, m[2]!, m[3]].filter((p): p is string => p !== undefined).map(Number);
  const large = parts.length === 3;
  const max = large ? MAX32 : MAX16;
  if (parts.some((p) => p > max)) {
    return refuse(
      large
        ? `each part of a large community is 0..${MAX32}`
        : `each part of a standard community is 0..${MAX16}; write a large community ASN:V1:V2 for a 32-bit ASN`,
    );
  }
  return accept(parts.join(":"));
}
