// BIRD itself, driven the same way by the agent and the controller's local speaker: the render
// (bundle → config text), the control socket, `bird -p` validation, the configure/confirm
// cycle, the parsers of `show status` and `show protocols all`, and the sequence joining them.
export {
  type ApplyDeps,
  ApplyError,
  type ApplyErrorCode,
  type ApplyOptions,
  applyBirdConfig,
  type PendingApply,
} from "./apply.js";
export {
  assertPrivateDirectory,
  birdReadable,
  type FileAccess,
  groupId,
  readFileNoFollow,
  syncDirectory,
  UnsafeDirectoryError,
  writeFileAtomic,
} from "./atomic-file.js";
export {
  BirdClient,
  type BirdClientOptions,
  type BirdControl,
  BirdError,
  type BirdErrorCode,
  type BirdReply,
  type BirdReplyLine,
} from "./birdc.js";
export { type ClassifiedError, classifyBirdError, SyncError } from "./errors.js";
export * from "./render/index.js";
export {
  type BirdSequenceOptions,
  checkRenderedProtocols,
  configureTimeoutSeconds,
  healthCheckThenConfirm,
  type LoadedConfig,
  loadBirdConfig,
  type Probation,
  renderOptionsFor,
} from "./sequence.js";
export {
  type BgpSessionLive,
  type ChannelStatus,
  type ParsedProtocols,
  type ParseOptions,
  type ProtocolSummary,
  parseProtocolsAll,
} from "./status/parse-protocols.js";
export { parseShowStatus } from "./status/parse-status.js";
export {
  BirdConfigError,
  type BirdConfigLocation,
  createProcessRunner,
  formatExcerpt,
  type ProcessResult,
  type ProcessRunner,
  parseBirdError,
  type ValidateOptions,
  validateBirdConfig,
} from "./validate.js";
export { type BirdDialect, type BirdVersion, BirdVersionWatch, birdDialect, parseBirdVersion } from "./version.js";
