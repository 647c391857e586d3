// BIRD itself: the control socket, `bird -p` validation and the configure/confirm cycle.
export {
  type ApplyDeps,
  ApplyError,
  type ApplyErrorCode,
  type ApplyOptions,
  applyBirdConfig,
  type Clock,
  createSystemClock,
  type PendingApply,
} from "./apply.js";
export {
  BirdClient,
  type BirdClientOptions,
  type BirdControl,
  BirdError,
  type BirdErrorCode,
  type BirdReply,
  type BirdReplyLine,
} from "./birdc.js";
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
