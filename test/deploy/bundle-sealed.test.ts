import { createHash } from "node:crypto";
import { isBundleV2, verifyBundle } from "@rlc/shared/bundle";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findSpeakerById } from "../../packages/controller/src/db/speakers.js";
import { createAgentService } from "../../packages/controller/src/grpc/agent-service.js";
import { type GrpcListener, listenGrpc } from "../../packages/controller/src/grpc/server.js";
import { SEALED_BYTES_OVERHEAD } from "../../packages/controller/src/lib/secret-box.js";
import { issueBundle } from "../../packages/controller/src/services/deploy/bundles.js";
import { createRevisionStore } from "../../packages/controller/src/services/revisions/revision-store.js";
import type { AgentServiceClient } from "../../packages/proto/src/index.js";
import { AGENT_HEADERS, agentClient, getBundle } from "../helpers/agent-grpc.js";
import { type LiveController, startLiveController } from "../helpers/live-controller.js";

// A stored bundle holds the peers' passwords inside its signed payload: the database keeps it
// sealed with the data key, while agents (gRPC in slices, HTTP whole) still receive the signed
// bytes unchanged, with the real password in them.

const PASSWORD = "bgp-md5-Secr3t-in-bundle";
let t: LiveController;
let client: AgentServiceClient;
let speakerId: string;
let tenantId: string;
let nodeKey: string;
let revisionId: number;
let signingKeys: { key_id: string; public_key: string; status: "active" | "retired" }[];

const sql = () => t.controller.deps.sql;
const storedRow = async () =>
  (
    await sql()<{ envelope: Buffer; envelope_sealed: boolean; envelope_chunk: number | null; envelope_size: number | null }[]>`
      SELECT envelope, envelope_sealed, envelope_chunk, envelope_size FROM bundles WHERE speaker_id = ${speakerId} AND revision_id = ${revisionId}`
  )[0]!;

/** The bundle as an agent gets it over gRPC, checked against the first chunk's size and (rl-bundle/1) SHA-256. */
async function viaGrpc(c: AgentServiceClient, storedWhole = false): Promise<Buffer> {
  const chunks = await getBundle(c, nodeKey, speakerId, revisionId);
  const bytes = Buffer.concat(chunks.map((ch) => ch.data));
  // An rl-bundle/2 stored as head and section comes without a hash of the whole; a row that holds the whole envelope with it.
  const sha256 = isBundleV2(bytes) && !storedWhole ? "" : createHash("sha256").update(bytes).digest("hex");
  expect(chunks[0]).toMatchObject({ offset: 0, total_size: bytes.length, sha256 });
  return bytes;
}

/** Plain bytes of the revision's stored prefix section: what follows every speaker's head. */
const sectionSize = async () =>
  (await sql()<{ size: number }[]>`SELECT size FROM bundle_sections WHERE tenant_id = ${tenantId} AND revision_id = ${revisionId} AND base_revision_id = 0`)[0]!
    .size;

async function viaHttp(): Promise<Buffer> {
  const res = await t.controller.app.inject({
    method: "GET",
    url: `/v1/speakers/${speakerId}/bundle/${revisionId}`,
    headers: { authorization: `Bearer ${nodeKey}`, ...AGENT_HEADERS },
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.rawPayload;
}

async function expectRealPassword(bytes: Buffer) {
  const verified = await verifyBundle(bytes, signingKeys, { speakerId, tenantId, lastSequence: null, now: new Date() });
  expect(verified.payload.peers).toEqual([expect.objectContaining({ password: PASSWORD })]);
}

beforeAll(async () => {
  t = await startLiveController();
  client = agentClient(t.grpcAddress, t.grpcCredentials);
  const mod = (await t.call(t.rootKey, "POST", "/v1/modules", { name: "ranges", type: "IP_RANGES" })).json();
  await t.call(t.rootKey, "POST", `/v1/modules/${mod.id}/ip-range-entries`, { cidr: "11.2.0.0/16" });
  revisionId = (await t.call(t.rootKey, "POST", `/v1/modules/${mod.id}/refresh?wait=true`)).json().result.revision_id;
  const speaker = (await t.call(t.rootKey, "POST", "/v1/speakers", { name: "edge-sealed", mode: "remote", router_id: "192.0.2.21", asn: 65021 })).json();
  speakerId = speaker.id;
  const enrolled = (await t.call(speaker.enrollment_token, "POST", "/v1/nodes/enroll", { hostname: "r.sealed", agent_version: "1.0.0" })).json();
  nodeKey = enrolled.api_key;
  tenantId = enrolled.tenant_id;
  signingKeys = enrolled.signing_keys;
  const peer = await t.call(t.rootKey, "POST", "/v1/peers", {
    name: "up",
    neighbor_address: "192.0.2.254",
    remote_asn: 65100,
    password: PASSWORD,
    address_families: ["ipv4"],
    speaker_ids: [speakerId],
  });
  expect(peer.statusCode, peer.body).toBe(201);
  const apply = await t.call(t.rootKey, "POST", "/v1/apply", { speaker_ids: [speakerId], timeout_seconds: 20 });
  expect(apply.statusCode, apply.body).toBe(202);
  let latest = await t.call(nodeKey, "GET", `/v1/speakers/${speakerId}/revisions/latest`);
  for (let i = 0; i < 200 && latest.statusCode !== 200; i++) {
    await new Promise((r) => setTimeout(r, 50));
    latest = await t.call(nodeKey, "GET", `/v1/speakers/${speakerId}/revisions/latest`);
  }
  expect(latest.statusCode, latest.body).toBe(200);
  await t.call(t.rootKey, "POST", `/v1/jobs/${apply.json().job_id}/cancel`);
}, 60_000);

afterAll(async () => {
  client?.close();
  await t?.close();
});

describe("stored bundles are sealed at rest", () => {
  it("the database row does not hold the password; gRPC and HTTP deliver the same signed bytes with it", async () => {
    const [stored] = await sql()<{ envelope: Buffer }[]>`SELECT envelope FROM bundles WHERE speaker_id = ${speakerId} AND revision_id = ${revisionId}`;
    expect(stored!.envelope.includes(Buffer.from(PASSWORD))).toBe(false);
    expect(stored!.envelope.includes(Buffer.from('"payload"'))).toBe(false);
    const row = await storedRow();
    expect(row.envelope_sealed).toBe(true);
    const grpcBytes = await viaGrpc(client);
    const httpBytes = await viaHttp();
    expect(grpcBytes.equals(httpBytes)).toBe(true);
    expect(grpcBytes.length).toBe(row.envelope_size! + (await sectionSize()));
    await expectRealPassword(grpcBytes);
  });

  describe("an envelope larger than one sealed piece", () => {
    let listener: GrpcListener;
    let own: AgentServiceClient;

    beforeAll(async () => {
      const d = t.controller.deps;
      // Slices of 200 bytes over pieces of 300: slices straddle piece boundaries.
      const service = createAgentService({
        sql: d.sql,
        bus: d.bus,
        clock: d.clock,
        node: d.services.node,
        authenticator: d.services.authenticator,
        logger: t.controller.app.log,
        chunkBytes: 200,
      });
      listener = await listenGrpc({ host: "127.0.0.1", port: 0, tls: null });
      listener.serve(service);
      own = agentClient(listener.address);
      const speaker = (await findSpeakerById(d.sql, tenantId, speakerId))!;
      await issueBundle(
        d.sql,
        { signing: d.services.signing, revisions: createRevisionStore(), secretBox: d.services.secretBox, sealChunkBytes: 300 },
        speaker,
        revisionId,
        7,
        new Date(),
      );
    });
    afterAll(async () => {
      own?.close();
      await listener?.close();
    });

    it("is stored as several sealed pieces and read back whole over gRPC (any slice size) and HTTP", async () => {
      const row = await storedRow();
      expect(row).toMatchObject({ envelope_sealed: true, envelope_chunk: 300 });
      const pieces = Math.ceil(row.envelope_size! / 300);
      expect(pieces).toBeGreaterThan(3);
      expect(row.envelope.length).toBe(row.envelope_size! + pieces * SEALED_BYTES_OVERHEAD);
      expect(row.envelope.includes(Buffer.from(PASSWORD))).toBe(false);
      const sliced = await viaGrpc(own);
      const whole = await viaGrpc(client);
      const http = await viaHttp();
      expect(sliced.equals(whole)).toBe(true);
      expect(sliced.equals(http)).toBe(true);
      expect(sliced.length).toBe(row.envelope_size! + (await sectionSize()));
      await expectRealPassword(sliced);
      expect(isBundleV2(sliced)).toBe(true);
    });

    it("a row stored before sealing (plain, the whole envelope in the row) is still served as it is", async () => {
      const plain = await viaHttp();
      await sql()`UPDATE bundles SET envelope = ${plain}, envelope_sealed = false, envelope_chunk = NULL, envelope_size = NULL, envelope_sha256 = NULL,
        format = 1, delta_base_revision_id = NULL, delta_head = NULL WHERE speaker_id = ${speakerId} AND revision_id = ${revisionId}`;
      expect((await viaGrpc(own, true)).equals(plain)).toBe(true);
      expect((await viaGrpc(client, true)).equals(plain)).toBe(true);
      expect((await viaHttp()).equals(plain)).toBe(true);
    });
  });
});
