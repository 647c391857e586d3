import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { afterEach, describe, expect, it } from "vitest";
import {
  bundleChunks,
  notificationFromJson,
  notificationFromProto,
  notificationToProto,
  type StatusReport,
  statusReportFromProto,
  statusReportToProto,
} from "./convert.js";
import type { AgentServiceHandlers } from "./loader.js";
import { AGENT_PROTO_PATH, bearerFromMetadata, bearerMetadata, loadAgentService, PROTO_LOADER_OPTIONS, packageDefinitionFromText } from "./loader.js";
import type { BundleChunk, ReportStatusRequest, WatchEvent } from "./messages.js";

const report: StatusReport = {
  speaker_id: "s1",
  reason: "apply_failed",
  poll_id: null,
  applied_revision_id: 4,
  applied_sequence: 9,
  applied_digest: "sha256:ab",
  applied_at: "2026-11-22T10:00:00.000Z",
  error: { code: "bad_signature", message: "signature does not verify", revision_id: 5, sequence: null, at: "2026-11-22T10:00:01.000Z" },
  bird: { reachable: true, version: "2.0.12", router_id: "127.0.0.1", server_time: null, last_reconfiguration: null },
  sessions: [
    {
      protocol: "rl_peer_x",
      peer_id: "p1",
      neighbor_address: "127.0.0.2",
      remote_asn: 65001,
      state: "up",
      bgp_state: "Established",
      since: "2026-11-22T09:00:00.000Z",
      routes_imported: 0,
      routes_exported: 3,
      last_error: null,
    },
  ],
  agent_version: "0.0.0",
  reported_at: "2026-11-22T10:00:02.000Z",
};

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

async function serve(handlers: Partial<AgentServiceHandlers>) {
  const { service, Client } = loadAgentService();
  const server = new grpc.Server();
  const unimplemented = (_: unknown, cb?: (e: grpc.ServiceError) => void) => cb?.({ code: grpc.status.UNIMPLEMENTED } as grpc.ServiceError);
  server.addService(service, { Enroll: unimplemented, Watch: unimplemented, GetBundle: unimplemented, ReportStatus: unimplemented, ...handlers });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
  );
  const client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  closers.push(async () => {
    client.close();
    await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
  });
  return client;
}

describe("agent.proto", () => {
  it("loader - resolves agent.proto beside the package, from src/ as from dist/", () => {
    expect(AGENT_PROTO_PATH).toMatch(/packages\/proto\/agent\.proto$/);
    expect(Object.keys(loadAgentService().service).sort()).toEqual(["Enroll", "GetBundle", "ReportStatus", "Watch"]);
  });

  it("loader - the text embedded in the single-file agent gives the same definition as the file", () => {
    const withoutDescriptors = (d: object) => JSON.stringify(d, (k, v) => (k === "fileDescriptorProtos" ? undefined : v));
    const fromFile = protoLoader.loadSync(AGENT_PROTO_PATH, PROTO_LOADER_OPTIONS);
    const fromText = packageDefinitionFromText(readFileSync(AGENT_PROTO_PATH, "utf8"));
    expect(Object.keys(fromText).sort()).toEqual(Object.keys(fromFile).sort());
    expect(withoutDescriptors(fromText)).toEqual(withoutDescriptors(fromFile));
  });

  it("messages.ts - every hand-written field is a field of the .proto message, and back", () => {
    const definition = protoLoader.loadSync(AGENT_PROTO_PATH, PROTO_LOADER_OPTIONS);
    const fields = (name: string) =>
      ((definition[`rl.agent.v1.${name}`] as { type: { field: { name: string }[] } }).type.field ?? []).map((f) => f.name).sort();
    expect(Object.keys(statusReportToProto(report)).sort()).toEqual(fields("ReportStatusRequest"));
    expect(Object.keys(statusReportToProto(report).sessions[0] ?? {}).sort()).toEqual(fields("BgpSessionLive"));
    expect(Object.keys(statusReportToProto(report).error ?? {}).sort()).toEqual(fields("StatusError"));
    expect(Object.keys(notificationToProto({ type: "ping" }, "t")).sort()).toEqual(fields("WatchEvent"));
    expect(Object.keys([...bundleChunks(new Uint8Array(1), 1)][0] ?? {}).sort()).toEqual(fields("BundleChunk"));
  });

  it("ReportStatus - a report survives gRPC and comes back as the same JSON, nulls included", async () => {
    let received: ReportStatusRequest | null = null;
    let key: string | null = null;
    const client = await serve({
      ReportStatus: (call, cb) => {
        received = call.request;
        key = bearerFromMetadata(call.metadata);
        cb(null, {});
      },
    });
    await new Promise<void>((resolve, reject) =>
      client.reportStatus(statusReportToProto(report), bearerMetadata("rlk_node"), {}, (e) => (e ? reject(e) : resolve())),
    );
    expect(key).toBe("rlk_node");
    expect(statusReportFromProto(received as unknown as ReportStatusRequest)).toEqual(report);
  });

  it("Watch and GetBundle - events and chunks stream through with numbers as numbers", async () => {
    const bytes = Buffer.alloc(2_500_000, 7);
    const client = await serve({
      Watch: (call) => {
        call.write(notificationToProto({ type: "new_revision", speaker_id: "s1", revision_id: 7, digest: "sha256:cd", sequence: 12 }, "t0"));
        call.write(notificationToProto({ type: "live_poll", poll_id: "poll-1" }, "t1"));
        call.end();
      },
      GetBundle: (call) => {
        for (const chunk of bundleChunks(bytes, call.request.revision_id)) call.write(chunk);
        call.end();
      },
    });
    const events: WatchEvent[] = [];
    const watch = client.watch({ speaker_id: "s1", agent_version: "0", applied_revision_id: 0, applied_sequence: 0 }, bearerMetadata("k"));
    watch.on("data", (e: WatchEvent) => events.push(e));
    await new Promise((resolve) => watch.on("end", resolve));
    expect(events.map(notificationFromProto)).toEqual([
      { type: "new_revision", speaker_id: "s1", revision_id: 7, digest: "sha256:cd", sequence: 12 },
      { type: "live_poll", poll_id: "poll-1" },
    ]);

    const chunks: BundleChunk[] = [];
    const stream = client.getBundle({ speaker_id: "s1", revision_id: 7 }, bearerMetadata("k"));
    stream.on("data", (c: BundleChunk) => chunks.push(c));
    await new Promise((resolve) => stream.on("end", resolve));
    expect(chunks.map((c) => c.data.length)).toEqual([1_048_576, 1_048_576, 402_848]);
    expect(chunks[0]).toMatchObject({ total_size: 2_500_000, revision_id: 7, sha256: createHash("sha256").update(bytes).digest("hex") });
    expect(chunks.map((c) => c.offset)).toEqual([0, 1_048_576, 2_097_152]);
  });

  it("notificationFromJson - takes the notifications NATS carries and nothing else", () => {
    expect(notificationFromJson({ type: "new_revision", speaker_id: "s", revision_id: 3, digest: "d" })).toEqual({
      type: "new_revision",
      speaker_id: "s",
      revision_id: 3,
      digest: "d",
      sequence: null,
    });
    expect(notificationFromJson({ type: "live_poll", poll_id: "p" })).toEqual({ type: "live_poll", poll_id: "p" });
    expect(notificationFromJson({ type: "new_revision", revision_id: "3", digest: "d", speaker_id: "s" })).toBeNull();
    expect(notificationFromJson("wake up")).toBeNull();
  });
});
