// The signed bundle that carries a revision to one speaker: canonical JSON, payload types and
// digest, Ed25519 signing and verification, key statements for rotation.
export { canonicalJson, canonicalJsonBytes } from "./canonical-json.js";
export { BundleError, type BundleErrorCode } from "./errors.js";
export {
  KEY_STATEMENT_FORMAT,
  type KeyStatement,
  type KeyStatementBody,
  signKeyStatement,
  type VerifiedKeyStatement,
  verifyKeyStatement,
} from "./key-statement.js";
export {
  BIRD_DEFAULTS,
  type BirdSettings,
  type BundleCommunity,
  type BundleContent,
  type BundlePayload,
  type BundlePeer,
  type BundlePrefix,
  type BundlePrefixes,
  type BundleSpeaker,
  buildBundlePayload,
  computeBundleDigest,
  DEFAULT_BUNDLE_LIFETIME_MS,
  DIGEST_EXCLUDED_FIELDS,
  type IssueOptions,
  PROBATION_CONFIRM_MARGIN_SECONDS,
  type SpeakerPolicies,
} from "./payload.js";
export {
  BUNDLE_FORMAT,
  DEFAULT_MAX_BUNDLE_BYTES,
  generateSigningKey,
  keyIdOf,
  type PinnedKey,
  SIGNING_ALG,
  type SignedBundle,
  type SigningKeyPair,
  signBundle,
  signingKeyFromSeed,
  type VerifiedBundle,
  type VerifyOptions,
  verifyBundle,
} from "./sign.js";
