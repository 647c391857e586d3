// BIRD's protocol sessions, parsed from `show protocols all` for the live status report.
export {
  type BgpSessionLive,
  type ParsedProtocols,
  type ParseOptions,
  type ProtocolSummary,
  parseProtocolsAll,
} from "./parse-protocols.js";
