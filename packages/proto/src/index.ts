// agent.proto, its loader, hand-written types of its messages and their JSON forms. grpc-js is
// re-exported so the controller and the agent build servers, clients and metadata from the
// same copy as the service definition.
export * as grpc from "@grpc/grpc-js";
export {
  type AgentNotification,
  type BgpSessionLiveJson,
  type BirdInfoJson,
  bundleChunks,
  notificationFromJson,
  notificationFromProto,
  notificationToProto,
  type ReportReasonJson,
  type SigningKeyJson,
  type StatusErrorJson,
  type StatusReport,
  sessionFromProto,
  sessionToProto,
  signingKeyFromProto,
  signingKeyToProto,
  statusReportFromProto,
  statusReportToProto,
} from "./convert.js";
export {
  AGENT_PROTO_PATH,
  AGENT_SERVICE_NAME,
  type AgentServiceClient,
  type AgentServiceClientConstructor,
  type AgentServiceDefinition,
  type AgentServiceHandlers,
  BUNDLE_CHUNK_MAX_BYTES,
  bearerFromMetadata,
  bearerMetadata,
  loadAgentService,
  packageDefinitionFromText,
  PROTO_LOADER_OPTIONS,
} from "./loader.js";
export type {
  BgpSessionLive,
  BirdInfo,
  BundleChunk,
  EnrollRequest,
  EnrollResponse,
  GetBundleRequest,
  ReportReason,
  ReportStatusRequest,
  ReportStatusResponse,
  SigningKey,
  SigningKeyStatus,
  StatusError,
  WatchEvent,
  WatchEventType,
  WatchRequest,
} from "./messages.js";
