/** Why a text is not an acceptable address or CIDR. */
export type PrefixErrorCode = "invalid_address" | "invalid_prefix_length" | "host_bits_set" | "not_sorted";

/**
 * Thrown for an address or CIDR that does not parse, or that strict parsing refuses.
 * The message is meant for an operator: it says what is wrong and, for host bits, names the
 * network that was probably meant.
 */
export class PrefixError extends Error {
  override readonly name = "PrefixError";
  /** Stable reason, for mapping to an API error code. */
  readonly code: PrefixErrorCode;
  /** The text that was refused, unchanged. */
  readonly input: string;
  /** For `host_bits_set`: the canonical network with the host bits cleared. */
  readonly network: string | undefined;

  constructor(code: PrefixErrorCode, input: string, message: string, network?: string) {
    super(message);
    this.code = code;
    this.input = input;
    this.network = network;
  }
}
