// Bundle → BIRD 2 or 3 configuration text (what differs by version: ../version.ts): pure, tested against golden files.
export {
  type CheckText,
  DEFAULT_INCLUDE_NAME,
  DEFAULT_MAIN_NAME,
  isStaticFileName,
  type RenderedConfig,
  type RenderOptions,
  renderBirdConfig,
  type SectionInput,
  type SectionSource,
  SectionStaticsCache,
  StaticsCache,
  staticFileName,
  TABLE_V4,
  TABLE_V6,
} from "./render.js";
export { peerIdFromProtocol, peerProtocolName, RenderError } from "./values.js";
