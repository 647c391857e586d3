// Errors of the ASN sources (`ASN_SOURCE`). HTTP and network failures of RIPEstat stay
// OutboundErrors; these say the source itself is misconfigured or answered nonsense.

export type AsnSourceErrorCode = "asn_source_config" | "asn_source_status" | "asn_source_malformed" | "asn_file_unreadable";

export class AsnSourceError extends Error {
  override readonly name = "AsnSourceError";
  readonly code: AsnSourceErrorCode;

  constructor(code: AsnSourceErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}
