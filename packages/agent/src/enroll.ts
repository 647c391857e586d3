import type { ControllerHttpClient } from "./bundle/http-client.js";
import { keysFromEnrollment } from "./bundle/signing-keys.js";
import { writeNatsCredentials } from "./nats-credentials.js";
import type { NodeIdentity, StateStore } from "./state.js";

export class NotEnrolledError extends Error {
  override name = "NotEnrolledError";
}

export interface EnrollOptions {
  http: ControllerHttpClient;
  state: StateStore;
  token: string;
  hostname: string;
  agentVersion: string;
  now: () => number;
}

/**
 * Spends the enrollment token (`POST /v1/nodes/enroll`) and keeps what it bought: the signing
 * keys and the NATS credentials first, the node identity last, so "node.json exists" means "enrolled, keys pinned".
 */
export async function enroll(o: EnrollOptions): Promise<NodeIdentity> {
  const result = await o.http.enroll(o.token, { hostname: o.hostname, agent_version: o.agentVersion });
  await o.state.writeSigningKeys(keysFromEnrollment(result.signing_keys));
  if (result.nats_credentials) await writeNatsCredentials(o.state.dir, result.nats_credentials);
  const node: NodeIdentity = {
    speaker_id: result.speaker_id,
    tenant_id: result.tenant_id,
    api_key: result.api_key,
    grpc_endpoint: result.grpc_endpoint,
    nats_url: result.nats_url,
    enrolled_at: new Date(o.now()).toISOString(),
  };
  await o.state.writeNode(node);
  return node;
}

/** The stored identity, or a fresh enrollment when there is none and a token is at hand. */
export async function ensureEnrolled(o: Omit<EnrollOptions, "token"> & { token: string | undefined }): Promise<NodeIdentity> {
  const existing = await o.state.readNode();
  if (existing) return existing;
  if (!o.token) throw new NotEnrolledError(`not enrolled (no node.json in ${o.state.dir}) and RL_ENROLLMENT_TOKEN is not set`);
  return enroll({ ...o, token: o.token });
}
