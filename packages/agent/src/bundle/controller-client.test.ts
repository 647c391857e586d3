import type { AgentNotification } from "@rlc/proto";
import { type BundleHeadV2, verifyBundleHeadV2 } from "@rlc/shared/bundle";
import { describe, expect, it } from "vitest";
import { fixtureContent } from "../../../../test/helpers/agent-fakes.js";
import type { StandInController } from "../../../../test/helpers/stand-in-controller.js";
import { deadAddress, standInSetup, statusReport } from "../../../../test/helpers/stand-in-grpc.js";
import { until } from "../../../../test/helpers/wait.js";
import { AgentMetrics } from "../http/metrics.js";
import { silentLogger } from "../log.js";
import { createControllerClient } from "./controller-client.js";
import { ControllerError, ControllerHttpClient } from "./http-client.js";

const { cleanups, controller, ...standIn } = standInSetup();

const grpcClient = (c: StandInController, address = c.grpcAddress) => standIn.grpcClient({ address, nodeKey: c.nodeKey, speakerId: c.speakerId });
const report = (speakerId: string) => statusReport(speakerId, "live_poll", "poll-7");

describe("controller client", () => {
  it("gRPC - GetBundle reassembles the chunks byte for byte; ReportStatus arrives with the node key", async () => {
    const c = await controller();
    const issue = await c.publish(fixtureContent());
    const grpc = grpcClient(c);
    expect(Buffer.from((await grpc.fetchBundle(1, { maxBytes: 1_000_000 })).bytes).equals(issue.bytes)).toBe(true);
    await grpc.reportStatus(report(c.speakerId));
    expect(c.reports).toEqual([{ via: "grpc", report: report(c.speakerId) }].map((r) => ({ ...r, report: { ...r.report, reported_at: expect.any(String) } })));
  });

  it("gRPC - a bundle over the cap is refused from the first chunk's total_size", async () => {
    const c = await controller();
    await c.publish(fixtureContent());
    await expect(grpcClient(c).fetchBundle(1, { maxBytes: 100 })).rejects.toMatchObject({ code: "too_large" });
  });

  it("an rl-bundle/2 whose head the agent refuses ends the transfer with that refusal, over gRPC and over HTTP, and is not fetched again the other way", async () => {
    const content = fixtureContent();
    for (const grpcUp of [true, false]) {
      const c = await controller({ grpc: grpcUp });
      // Signed for another speaker: refused on its head, as the verifier would refuse it whole.
      const issue = await c.publish(content, { v2: true, speakerId: "0192f3a4-0000-7000-8000-0000000000bb" });
      const client = createControllerClient({
        http: new ControllerHttpClient({ baseUrl: c.url, nodeKey: c.nodeKey }),
        grpc: grpcUp ? grpcClient(c) : null,
        speakerId: c.speakerId,
        maxBundleBytes: 1_000_000,
        log: silentLogger,
      });
      const heads: string[] = [];
      const options = { speakerId: c.speakerId, tenantId: c.tenantId, lastSequence: null, now: Date.now() };
      const onHead = (head: BundleHeadV2) => {
        heads.push(head.keyId);
        verifyBundleHeadV2(head, [{ key_id: c.signingKey.keyId, public_key: c.signingKey.publicKey }], options);
      };
      await expect(client.fetchBundle(issue.revision_id, { onHead })).rejects.toMatchObject({ code: "wrong_speaker" });
      expect(heads).toEqual([c.signingKey.keyId]);
      expect(c.httpRequests.filter((r) => r.includes("/bundle/"))).toHaveLength(grpcUp ? 0 : 1);
      // The same bundle for the right speaker comes whole, with its parts hashed on the way.
      const good = await c.publish(content, { v2: true });
      const received = await client.fetchBundle(good.revision_id, { onHead });
      expect(Buffer.from(received.bytes).equals(good.bytes)).toBe(true);
      expect(received.v2?.sectionSha256).toMatch(/^[0-9a-f]{64}$/);
    }
  });

  it("HTTP fallback - with gRPC down, bundles come over HTTP (gzip) and reports go to POST /v1/speakers/{id}/status", async () => {
    const c = await controller({ grpc: false });
    const issue = await c.publish(fixtureContent());
    const metrics = new AgentMetrics({ version: "test", speakerId: c.speakerId });
    const client = createControllerClient({
      http: new ControllerHttpClient({ baseUrl: c.url, nodeKey: c.nodeKey }),
      grpc: grpcClient(c, await deadAddress()),
      speakerId: c.speakerId,
      maxBundleBytes: 1_000_000,
      log: silentLogger,
      onFallback: (op) => metrics.recordFallback(op),
    });
    expect(Buffer.from((await client.fetchBundle(1)).bytes).equals(issue.bytes)).toBe(true);
    await client.reportStatus(report(c.speakerId));
    expect(c.reports.map((r) => r.via)).toEqual(["http"]);
    expect(c.httpRequests).toEqual([`GET /v1/speakers/${c.speakerId}/bundle/1 gzip`, expect.stringMatching(`^POST /v1/speakers/${c.speakerId}/status`)]);
    expect(metrics.render()).toMatch(/rl_agent_transport_fallbacks_total\{operation="fetch_bundle"\} 1\n.*operation="report_status"\} 1/);
  });

  it("HTTP - latest names the desired revision, 404 when there is none; a wrong key is unauthenticated", async () => {
    const c = await controller({ grpc: false });
    const http = new ControllerHttpClient({ baseUrl: c.url, nodeKey: c.nodeKey });
    expect(await http.latest(c.speakerId)).toBeNull();
    const issue = await c.publish(fixtureContent());
    expect(await http.latest(c.speakerId)).toEqual({ revision_id: 1, digest: issue.digest, sequence: 1, issued_at: issue.issued_at });
    const stranger = new ControllerHttpClient({ baseUrl: c.url, nodeKey: "rlk_wrong" });
    await expect(stranger.latest(c.speakerId)).rejects.toMatchObject({ code: "unauthenticated", status: 401 });
    await expect(http.fetchBundle(c.speakerId, 1, { maxBytes: 100 })).rejects.toMatchObject({ code: "too_large" });
  });

  it("HTTP - enroll spends the token once and answers the identity and keys to pin", async () => {
    const c = await controller();
    const http = new ControllerHttpClient({ baseUrl: c.url, nodeKey: null });
    const enrolled = await http.enroll(c.enrollmentToken, { hostname: "r1", agent_version: "test" });
    expect(enrolled).toMatchObject({ speaker_id: c.speakerId, tenant_id: c.tenantId, api_key: c.nodeKey, grpc_endpoint: c.grpcAddress, nats_url: null });
    expect(enrolled.signing_keys).toEqual([expect.objectContaining({ key_id: c.signingKey.keyId, status: "active" })]);
    const again = await http.enroll(c.enrollmentToken, { hostname: "r1", agent_version: "test" }).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(ControllerError);
    expect(again).toMatchObject({ code: "unauthenticated" });
  });

  it("Watch - delivers the desired revision on connect, then applies and polls; reconnects after the controller restarts", async () => {
    const c = await controller();
    await c.publish(fixtureContent());
    const seen: AgentNotification[] = [];
    let connects = 0;
    const watch = grpcClient(c).watch({ onNotification: (n) => seen.push(n), onConnected: () => connects++ }, async () => ({
      speaker_id: c.speakerId,
      agent_version: "test",
      applied_revision_id: 0,
      applied_sequence: 0,
    }));
    cleanups.push(() => watch.stop());
    await until("the condition", async () => seen.length === 1);
    c.livePoll("poll-1");
    await until("the condition", async () => seen.length === 2);
    expect(seen).toEqual([
      { type: "new_revision", speaker_id: c.speakerId, revision_id: 1, digest: expect.stringMatching(/^sha256:/), sequence: 1 },
      { type: "live_poll", poll_id: "poll-1" },
    ]);
    await c.stopGrpc();
    await c.startGrpc();
    await until("the condition", async () => connects === 2 && seen.length === 3, 5000);
    expect(seen[2]).toMatchObject({ type: "new_revision", revision_id: 1 });
  });
});
