// Errors of DoH resolution. Transport failures stay OutboundErrors (their codes are already
// stable); these cover what a server said, or sent, once the HTTP exchange succeeded.

export type DohErrorCode = "doh_malformed" | "doh_rcode" | "doh_cname_chain";

export abstract class DohError extends Error {
  abstract readonly code: DohErrorCode;
}

/** The body was not a DNS answer to the question asked (bad packet, bad JSON, wrong shape). */
export class DohMalformedError extends DohError {
  override readonly name = "DohMalformedError";
  override readonly code = "doh_malformed" as const;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** The server answered with an rcode other than NOERROR (NXDOMAIN, SERVFAIL, REFUSED, ...). */
export class DohRcodeError extends DohError {
  override readonly name = "DohRcodeError";
  override readonly code = "doh_rcode" as const;
  readonly rcode: string;

  constructor(rcode: string, name: string) {
    super(`${rcode} for ${name}`);
    this.rcode = rcode;
  }
}

/** A CNAME chain that loops, or is longer than the hop limit. */
export class DohCnameChainError extends DohError {
  override readonly name = "DohCnameChainError";
  override readonly code = "doh_cname_chain" as const;
}
