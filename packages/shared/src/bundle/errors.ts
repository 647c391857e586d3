import { CodedError } from "../coded-error.js";

/**
 * Why a bundle or key statement was refused. Stable words: the agent reports them to the
 * controller as they are, and the controller shows them on the apply job.
 */
export type BundleErrorCode =
  | "too_large"
  | "malformed"
  | "unsupported_format"
  | "unknown_key"
  | "retired_key"
  | "bad_signature"
  | "wrong_speaker"
  | "wrong_tenant"
  | "stale_sequence"
  | "expired"
  | "digest_mismatch"
  /** A delta bundle over a base the agent does not hold: it fetches the full bundle instead. */
  | "delta_base_mismatch";

export class BundleError extends CodedError<BundleErrorCode> {
  override name = "BundleError";
}
