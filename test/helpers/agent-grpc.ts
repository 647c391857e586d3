import {
  type AgentServiceClient,
  announcementToProto,
  type BundleChunk,
  bearerMetadata,
  type EnrollResponse,
  grpc,
  loadAgentService,
  type ReportStatusRequest,
  type WatchEvent,
  type WatchRequest,
} from "../../packages/proto/src/index.js";
import { type AgentAnnouncement, announcementHeaders, CURRENT_ANNOUNCEMENT } from "../../packages/shared/src/bundle/index.js";

/** The HTTP headers of this release's agent: what it accepts (a request without them is from an agent of the release before). */
export const AGENT_HEADERS = announcementHeaders(CURRENT_ANNOUNCEMENT);

// A plain grpc-js AgentService client for tests, each call turned into a promise or a recorded
// stream, so a test can say what the controller answered without the agent's own client logic.

export function agentClient(address: string, credentials = grpc.credentials.createInsecure()): AgentServiceClient {
  return new (loadAgentService().Client)(address, credentials);
}

const metadataOf = (key: string | null) => (key === null ? new grpc.Metadata() : bearerMetadata(key));

export function enroll(client: AgentServiceClient, key: string | null, hostname = "r1", agentVersion = "1.0.0"): Promise<EnrollResponse> {
  return new Promise((resolve, reject) =>
    client.enroll({ hostname, agent_version: agentVersion, public_key: "" }, metadataOf(key), { deadline: Date.now() + 10_000 }, (e, r) =>
      e ? reject(e) : resolve(r!),
    ),
  );
}

export function reportStatus(client: AgentServiceClient, key: string | null, report: Partial<ReportStatusRequest> & { speaker_id: string }): Promise<void> {
  const full: ReportStatusRequest = {
    reason: "REPORT_REASON_SESSIONS_CHANGED",
    poll_id: "",
    applied_revision_id: 0,
    applied_sequence: 0,
    applied_digest: "",
    applied_at: "",
    error: null,
    bird: { reachable: true, version: "2.0.12", router_id: "192.0.2.1", server_time: "", last_reconfiguration: "" },
    sessions: [],
    agent_version: "1.0.0",
    reported_at: new Date().toISOString(),
    ...report,
  };
  return new Promise((resolve, reject) => client.reportStatus(full, metadataOf(key), { deadline: Date.now() + 10_000 }, (e) => (e ? reject(e) : resolve())));
}

export interface RecordedWatch {
  events: WatchEvent[];
  /** The stream's end: its status (OK after a server-side end). */
  ended: Promise<grpc.StatusObject>;
  /** The first event from index `from` on that `match` accepts. */
  next(match: (e: WatchEvent) => boolean, options?: { from?: number; timeoutMs?: number }): Promise<WatchEvent>;
  cancel(): void;
}

export function watch(client: AgentServiceClient, key: string | null, request: Partial<WatchRequest> = {}): RecordedWatch {
  const call = client.watch({ speaker_id: "", agent_version: "1.0.0", applied_revision_id: 0, applied_sequence: 0, ...request }, metadataOf(key));
  const events: WatchEvent[] = [];
  call.on("data", (e: WatchEvent) => events.push(e));
  const ended = new Promise<grpc.StatusObject>((resolve) => {
    call.on("status", (s: grpc.StatusObject) => resolve(s));
    call.on("error", () => undefined); // the status event carries it
  });
  return {
    events,
    ended,
    async next(match, o = {}) {
      const deadline = Date.now() + (o.timeoutMs ?? 10_000);
      for (;;) {
        const found = events.slice(o.from ?? 0).find(match);
        if (found) return found;
        if (Date.now() > deadline)
          throw new Error(`no matching Watch event; got ${JSON.stringify(events.map((e) => [e.type, e.revision_id, e.sequence, e.poll_id]))}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    cancel: () => call.cancel(),
  };
}

/** GetBundle as this release's agent asks it (`announced`: what it accepts; null: an agent of the release before). */
export function getBundle(
  client: AgentServiceClient,
  key: string | null,
  speakerId: string,
  revisionId: number,
  baseRevisionId = 0,
  announced: AgentAnnouncement | null = CURRENT_ANNOUNCEMENT,
): Promise<BundleChunk[]> {
  return new Promise((resolve, reject) => {
    const chunks: BundleChunk[] = [];
    const request = { speaker_id: speakerId, revision_id: revisionId, base_revision_id: baseRevisionId, ...announcementToProto(announced) };
    const call = client.getBundle(request, metadataOf(key), { deadline: Date.now() + 30_000 });
    call.on("data", (c: BundleChunk) => chunks.push(c));
    call.on("error", reject);
    call.on("end", () => resolve(chunks));
  });
}

/** The grpc status code a rejected call carried. */
export async function codeOf(promise: Promise<unknown>): Promise<number> {
  try {
    await promise;
    return grpc.status.OK;
  } catch (error) {
    return (error as grpc.ServiceError).code;
  }
}
