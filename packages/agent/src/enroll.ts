import { X509Certificate } from "node:crypto";
import type { AgentAnnouncement } from "@rlc/shared/bundle";
import { ControllerError, ControllerHttpClient } from "./bundle/http-client.js";
import { endpointOf, fetchPinnedCa, pinnedFetch, pinOf } from "./bundle/pinning.js";
import { keysFromEnrollment } from "./bundle/signing-keys.js";
import { type AgentConfig, requireControllerUrls } from "./config.js";
import type { Logger } from "./log.js";
import { writeNatsCredentials } from "./nats-credentials.js";
import type { NodeIdentity, StateStore } from "./state.js";

export class NotEnrolledError extends Error {
  override name = "NotEnrolledError";
}

export interface EnrollOptions {
  /** The controller's HTTP base (RL_CONTROLLER_URL). */
  controllerUrl: string;
  /** RL_GRPC_URL, when set. */
  grpcUrl?: string | undefined;
  /** RL_CA_HASH, when set; otherwise the token's own. */
  caHash?: string | undefined;
  /** RL_INSECURE: enrollment without a CA hash, over http:// (warned at every start). */
  insecure: boolean;
  state: StateStore;
  token: string;
  hostname: string;
  agentVersion: string;
  now: () => number;
  log?: Logger;
  /** What the agent announces (config.ts `announcement`); default this release's. */
  announcement?: AgentAnnouncement | null;
}

/**
 * Spends the enrollment token (`POST /v1/nodes/enroll`) and keeps what it bought: the signing
 * keys and the NATS credentials first, the node identity last, so "node.json exists" means "enrolled, keys pinned".
 *
 * The controller is checked before the token is sent: over https://, its certificate chain must
 * hold the CA whose hash the token carries (or RL_CA_HASH), and the request goes out trusting
 * that CA alone — so no one on the path can answer with signing keys of their own. Without a
 * hash, only RL_INSECURE=true enrolls.
 */
export async function enroll(o: EnrollOptions): Promise<NodeIdentity> {
  const pin = pinOf(o.token, o.caHash);
  if (!pin && !o.insecure) {
    throw new ControllerError(
      "untrusted_controller",
      "the enrollment token carries no CA hash (rlt_<secret>.<hex>) and RL_CA_HASH is not set: the controller cannot be checked (RL_INSECURE=true enrolls anyway)",
    );
  }
  const https = o.controllerUrl.startsWith("https://");
  let caPem: string | null = null;
  if (https && pin) {
    const { host, port } = endpointOf(o.controllerUrl);
    caPem = await fetchPinnedCa(host, port, pin);
  }
  const http = new ControllerHttpClient({
    baseUrl: o.controllerUrl,
    nodeKey: null,
    ...(caPem ? { fetch: pinnedFetch(caPem) } : {}),
    ...(o.announcement !== undefined ? { announcement: o.announcement } : {}),
  });
  const result = await http.enroll(o.token, { hostname: o.hostname, agent_version: o.agentVersion });
  await o.state.writeSigningKeys(keysFromEnrollment(result.signing_keys));
  if (result.nats_credentials) await writeNatsCredentials(o.state.dir, result.nats_credentials);
  const node: NodeIdentity = {
    speaker_id: result.speaker_id,
    tenant_id: result.tenant_id,
    api_key: result.api_key,
    grpc_endpoint: result.grpc_endpoint,
    nats_url: result.nats_url,
    enrolled_at: new Date(o.now()).toISOString(),
    ca_hash: pin,
    controller_ca_pem: caPem,
  };
  await o.state.writeNode(node);
  // Enrolled over http:// (RL_INSECURE): the pin still guards gRPC, checked at its first connection.
  return pin && !caPem ? ensureControllerCa(node, { grpcUrl: o.grpcUrl, controllerUrl: o.controllerUrl }, o.state, o.log) : node;
}

/**
 * What the configuration says of enrolling: the controller, how it is pinned, and the token.
 * With several replicas listed, the first enrolls and gives the CA: any would do (they share the
 * database and the CA), and enrolling is a step an operator watches.
 */
export function enrollmentSettings(config: AgentConfig) {
  return {
    controllerUrl: requireControllerUrls(config)[0],
    grpcUrl: config.grpcUrls[0],
    caHash: config.caHash,
    insecure: config.insecure,
    token: config.enrollmentToken,
    announcement: config.announcement,
  };
}

/** The stored identity, or a fresh enrollment when there is none and a token is at hand. */
export async function ensureEnrolled(o: Omit<EnrollOptions, "token"> & { token: string | undefined }): Promise<NodeIdentity> {
  const existing = await o.state.readNode();
  if (existing) return ensureControllerCa(existing, { grpcUrl: o.grpcUrl, controllerUrl: o.controllerUrl }, o.state, o.log);
  if (!o.token) throw new NotEnrolledError(`not enrolled (no node.json in ${o.state.dir}) and RL_ENROLLMENT_TOKEN is not set`);
  return enroll({ ...o, token: o.token });
}

/**
 * An identity with a pin but no CA yet (enrolled over http://, or gRPC was down): the CA is
 * fetched from the gRPC listener (or the https:// controller) and kept. A failure is logged and
 * tried again at the next start; meanwhile gRPC is not used without it. A pinned server
 * certificate (a leaf pin, GRPC_TLS_PIN=leaf) is taken again at every start: a renewal with the
 * same key keeps the pin but replaces the certificate TLS trusts; the one kept serves meanwhile.
 */
export async function ensureControllerCa(
  node: NodeIdentity,
  where: { grpcUrl?: string | undefined; controllerUrl: string },
  state: StateStore,
  log?: Logger,
): Promise<NodeIdentity> {
  if (!node.ca_hash) return node;
  if (node.controller_ca_pem && new X509Certificate(node.controller_ca_pem).ca) return node;
  const target = where.controllerUrl.startsWith("https://") ? where.controllerUrl : (where.grpcUrl ?? node.grpc_endpoint);
  if (!target) return node;
  try {
    const { host, port } = endpointOf(target);
    const pem = await fetchPinnedCa(host, port, node.ca_hash);
    if (pem === node.controller_ca_pem) return node;
    const updated = { ...node, controller_ca_pem: pem };
    await state.writeNode(updated);
    return updated;
  } catch (error) {
    log?.error("could not take the controller's CA from its listener", { target, error: (error as Error).message });
    return node;
  }
}
