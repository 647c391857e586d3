// BIRD itself, driven the same way by the agent and the controller's local speaker: the render
// (bundle → config text), the control socket, `bird -p` validation, the configure/confirm
// cycle as steps (sequence.ts names them in order), the parsers of `show status` and
// `show protocols all`.
export { type ApplyDeps, type ApplyOptions, applyBirdConfig } from "./apply.js";
export {
  assertPrivateDirectory,
  birdReadable,
  type FileAccess,
  type FileText,
  groupId,
  type MadeText,
  readFileNoFollow,
  syncDirectory,
  textData,
  textToWrite,
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
export { type ChangeOptions, type ValidatedChange, validateChange } from "./change.js";
export { type ConfigureOptions, configureBird } from "./configure.js";
export { confirmOrUndo, nothingPending, type PendingApply } from "./confirm.js";
export { ApplyError, type ApplyErrorCode, type ClassifiedError, classifyBirdError, SyncError } from "./errors.js";
export * from "./render/index.js";
export {
  type BirdSequenceOptions,
  type BirdTarget,
  changeFor,
  checkRenderedProtocols,
  configureTimeoutSeconds,
  type LoadedConfig,
  loadBirdConfig,
  renderForTarget,
  renderOptionsFor,
  restoreRendered,
  validateRendered,
} from "./sequence.js";
export {
  type BgpSessionLive,
  type ChannelStatus,
  type ParsedProtocols,
  type ParseOptions,
  type ProtocolChannel,
  type ProtocolSummary,
  parseProtocolChannels,
  parseProtocolsAll,
} from "./status/parse-protocols.js";
export { parseShowStatus } from "./status/parse-status.js";
export { removeObsolete, type StagedFiles, stageFiles, writeDiffering } from "./swap-files.js";
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
export { type KnownFile, WrittenFiles } from "./written-files.js";
