// The signed bundle that carries a revision to one speaker: canonical JSON, payload types and
// digest, Ed25519 signing and verification, key statements for rotation; `rl-bundle/2` (a
// signed header over hashed config and prefix sections) with its delta bundles; `rl-bundle/1`
// written for an agent of the release before, and what agents announce they accept.

export { type BundleV1Options, bundleV1FromV2 } from "./bundle-v1.js";
export {
  BUNDLE_FORMAT_V2,
  type BundleConfig,
  type BundleHeaderV2,
  type BundleHeadV2,
  type BundleLayoutV2,
  bundleLayoutV2,
  checkConfigV2,
  configBytes,
  contentDigestV2,
  isBundleV2,
  payloadOfV2,
  readKeptBundleV2,
  sha256Hex,
  signBundleHead,
  splitBundleV2,
  type VerifiedBundleV2,
  type VerifyV2Options,
  verifyBundleHeadV2,
  verifyBundleV2,
} from "./bundle-v2.js";
export { canonicalJson, canonicalJsonBytes } from "./canonical-json.js";
export {
  applyChunkedDelta,
  type ChunkedChange,
  type ChunkedSection,
  type ChunkedTarget,
  chunkedBytes,
  chunkSection,
  type SectionChunk,
} from "./chunked-section.js";
export { compactSection } from "./compact-section.js";
export { BundleError, type BundleErrorCode } from "./errors.js";
export {
  AGENT_CAPABILITIES,
  type AgentAnnouncement,
  type AgentCapability,
  ANNOUNCEMENT_HEADERS,
  announcedList,
  announcementHeaders,
  announcementOf,
  BUNDLE_FORMATS,
  type BundleFormatName,
  bundleFormatFor,
  CURRENT_ANNOUNCEMENT,
  hasCapability,
  isOldAgent,
} from "./formats.js";
export {
  KEY_STATEMENT_FORMAT,
  type KeyStatement,
  type KeyStatementBody,
  signKeyStatement,
  type VerifiedKeyStatement,
  verifyKeyStatement,
} from "./key-statement.js";
export {
  NOTIFICATION_MAX_AGE_MS,
  type NotificationCheck,
  type NotificationSignature,
  signNotification,
  verifyNotification,
} from "./notification.js";
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
  type ReceivedBundle,
  type SpeakerPolicies,
} from "./payload.js";
export {
  applyPrefixDelta,
  applyPrefixDeltaBytes,
  diffPrefixColumns,
  diffPrefixLines,
  diffPrefixSplices,
  type LineSplice,
  type PrefixColumns,
} from "./prefix-delta.js";
export { endsPage, type LineMap, type PagedLines, PREFIX_PAGES_FORMAT, pagesOf, pagesOfLines, type SectionPages, updatePages } from "./prefix-pages.js";
export {
  columnOf,
  decodePrefixSection,
  encodePrefixColumns,
  encodePrefixLines,
  encodePrefixSection,
  lazyPrefixes,
  PREFIX_DELTA_FORMAT,
  PREFIX_SECTION_FORMAT,
  type PrefixColumn,
  prefixLines,
  splitSection,
} from "./prefix-section.js";
export { BundleReceiver, type BundleReceiverOptions, receiveBundle } from "./receive.js";
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
} from "./sign.js";
export {
  applyTaggedDelta,
  prefixText,
  type SectionStore,
  SectionTags,
  sectionStore,
  type TaggedChange,
  type TaggedSection,
  tagSection,
} from "./tagged-section.js";
export { verifyBundle } from "./verify-bundle.js";
