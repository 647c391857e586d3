import { ValidationError } from "@rlc/shared/errors";
import { type CidrValue, cidrValueContains, parseCidrValue, parseIpValue } from "@rlc/shared/prefix";
import { type OutboundClient, OutboundRefusedError } from "../../sources/outbound.js";

/** What saving a URL needs to know of the outbound policy. */
export interface OutboundRules {
  /** Form check with the configured policy: scheme, credentials, literal refused addresses. */
  checkUrlForm(url: string): URL;
  /** The CIDRs of `APP_OUTBOUND_ALLOW_CIDRS`. */
  allowed: readonly CidrValue[];
}

export function createOutboundRules(outbound: Pick<OutboundClient, "checkUrlForm">, allowCidrs: string | undefined): OutboundRules {
  const allowed: CidrValue[] = [];
  for (const text of (allowCidrs ?? "").split(",")) {
    const parsed = parseCidrValue(text.trim());
    if (parsed.ok) allowed.push(parsed.cidr);
  }
  return { checkUrlForm: (url) => outbound.checkUrlForm(url), allowed };
}

/**
 * A URL about to be saved, in its normalised form (WHATWG serialisation), or a 400 naming the
 * field: the form check of the outbound policy, refused at save time rather than at fetch time.
 */
export function savedUrl(rules: OutboundRules, url: string, field: string): URL {
  try {
    return rules.checkUrlForm(url);
  } catch (err) {
    if (!(err instanceof OutboundRefusedError)) throw err;
    throw new ValidationError(`${field}: ${err.message}`, [{ path: `body.${field}`, message: err.message }], { reason: err.reason });
  }
}

/** Plain http is for resolvers the operator allowed by address: an IP literal inside `APP_OUTBOUND_ALLOW_CIDRS`. */
export function plainHttpAllowed(rules: OutboundRules, url: URL): boolean {
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  const address = parseIpValue(host);
  return address !== null && rules.allowed.some((c) => cidrValueContains(c, address));
}
