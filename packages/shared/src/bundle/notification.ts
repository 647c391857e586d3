import { canonicalJsonBytes } from "./canonical-json.js";
import { findKey, fromBase64, type PinnedKey, type SigningKeyPair, signDetached, toBase64, verifyDetached } from "./sign.js";

/**
 * Wake-ups the controller sends an agent over NATS carry a signature by the tenant's bundle
 * signing key, which the agent pins at enrollment. NATS permissions alone cannot promise that a
 * message on an agent's subject came from the controller: a consumer's deliver subject and the
 * reply subject of a JetStream request are not checked against a user's permissions, so a user
 * of the same account can make the server publish there. The agent acts only on what verifies.
 */
export const NOTIFICATION_MAX_AGE_MS = 5 * 60_000;

/** The fields the signature adds; the rest of the message is what it covers. */
export interface NotificationSignature {
  tenant_id: string;
  speaker_id: string;
  issued_at: string;
  key_id: string;
  sig: string;
}

/** The notification with its addressee, time and signature (base64 Ed25519 over the canonical JSON of everything but `sig`). */
export async function signNotification<T extends Record<string, unknown>>(
  key: SigningKeyPair,
  body: T & { tenant_id: string; speaker_id: string },
  now: Date,
): Promise<T & NotificationSignature> {
  const unsigned = { ...body, issued_at: now.toISOString(), key_id: key.keyId };
  const sig = await signDetached(canonicalJsonBytes(unsigned), key.secretKey);
  return { ...unsigned, sig: toBase64(sig) };
}

export type NotificationCheck = { ok: true; body: Record<string, unknown> } | { ok: false; reason: string };

/**
 * The notification when it is for this tenant and speaker, fresh (issued within
 * `NOTIFICATION_MAX_AGE_MS` either way of `now`) and signed by a pinned, non-retired key.
 */
export function verifyNotification(value: unknown, o: { tenantId: string; speakerId: string; keys: readonly PinnedKey[]; now: number }): NotificationCheck {
  if (!value || typeof value !== "object" || Array.isArray(value)) return { ok: false, reason: "not an object" };
  const { sig, ...unsigned } = value as Record<string, unknown>;
  if (typeof sig !== "string" || typeof unsigned.key_id !== "string") return { ok: false, reason: "unsigned" };
  if (unsigned.tenant_id !== o.tenantId || unsigned.speaker_id !== o.speakerId) return { ok: false, reason: "for another speaker" };
  const issued = typeof unsigned.issued_at === "string" ? Date.parse(unsigned.issued_at) : Number.NaN;
  if (!(Math.abs(o.now - issued) <= NOTIFICATION_MAX_AGE_MS)) return { ok: false, reason: "stale or from the future" };
  let publicKey: Uint8Array;
  let signature: Uint8Array;
  try {
    publicKey = findKey(o.keys, unsigned.key_id);
    signature = fromBase64(sig, "sig");
  } catch (error) {
    return { ok: false, reason: error instanceof Error ? error.message : "bad key" };
  }
  if (!verifyDetached(signature, canonicalJsonBytes(unsigned), publicKey)) return { ok: false, reason: "bad signature" };
  return { ok: true, body: unsigned };
}
