// The messages of agent.proto as @grpc/proto-loader hands them over with PROTO_LOADER_OPTIONS:
// field names as written (snake_case), uint64 as number, enums as their names, unset scalars
// as "" / 0 / false and unset messages as null. Written by hand; loader.test.ts checks them
// against the .proto file.

export type SigningKeyStatus = "SIGNING_KEY_STATUS_UNSPECIFIED" | "SIGNING_KEY_STATUS_ACTIVE" | "SIGNING_KEY_STATUS_RETIRED";

export type WatchEventType = "WATCH_EVENT_TYPE_UNSPECIFIED" | "WATCH_EVENT_TYPE_NEW_REVISION" | "WATCH_EVENT_TYPE_LIVE_POLL" | "WATCH_EVENT_TYPE_PING";

export type ReportReason =
  | "REPORT_REASON_UNSPECIFIED"
  | "REPORT_REASON_APPLIED"
  | "REPORT_REASON_APPLY_FAILED"
  | "REPORT_REASON_LIVE_POLL"
  | "REPORT_REASON_SESSIONS_CHANGED"
  | "REPORT_REASON_STARTED";

export interface EnrollRequest {
  hostname: string;
  agent_version: string;
  public_key: string;
  /** What the agent accepts; empty on an agent of the release before announcements. */
  bundle_formats?: string[];
  capabilities?: string[];
}

export interface SigningKey {
  key_id: string;
  alg: string;
  public_key: string;
  status: SigningKeyStatus;
  created_at: string;
  /** JSON of the key statement that introduced the key; "" for the first key. */
  statement_json: string;
}

export interface EnrollResponse {
  speaker_id: string;
  tenant_id: string;
  api_key: string;
  signing_keys: SigningKey[];
  grpc_endpoint: string;
  nats_url: string;
  nats_credentials: string;
}

export interface WatchRequest {
  speaker_id: string;
  agent_version: string;
  applied_revision_id: number;
  applied_sequence: number;
  /** What the agent accepts; empty on an agent of the release before announcements. */
  bundle_formats?: string[];
  capabilities?: string[];
}

export interface WatchEvent {
  type: WatchEventType;
  speaker_id: string;
  revision_id: number;
  digest: string;
  sequence: number;
  poll_id: string;
  sent_at: string;
}

export interface GetBundleRequest {
  speaker_id: string;
  revision_id: number;
  /** The revision the agent runs and holds the prefixes of (0 = none): a delta from it may come. */
  base_revision_id?: number;
  /** What the agent accepts; empty on an agent of the release before announcements. */
  bundle_formats?: string[];
  capabilities?: string[];
}

export interface BundleChunk {
  data: Buffer;
  offset: number;
  total_size: number;
  sha256: string;
  revision_id: number;
}

export interface StatusError {
  code: string;
  message: string;
  revision_id: number;
  sequence: number;
  at: string;
  check: string;
  sessions: string[];
}

export interface BirdInfo {
  reachable: boolean;
  version: string;
  router_id: string;
  server_time: string;
  last_reconfiguration: string;
}

export interface BgpSessionLive {
  protocol: string;
  peer_id: string;
  neighbor_address: string;
  remote_asn: number;
  state: string;
  bgp_state: string;
  since: string;
  routes_imported: number;
  routes_exported: number;
  last_error: string;
}

export interface ReportStatusRequest {
  speaker_id: string;
  reason: ReportReason;
  poll_id: string;
  applied_revision_id: number;
  applied_sequence: number;
  applied_digest: string;
  applied_at: string;
  error: StatusError | null;
  bird: BirdInfo | null;
  sessions: BgpSessionLive[];
  agent_version: string;
  reported_at: string;
  /** What the agent accepts; empty on an agent of the release before announcements. */
  bundle_formats?: string[];
  capabilities?: string[];
}

export type ReportStatusResponse = Record<string, never>;
