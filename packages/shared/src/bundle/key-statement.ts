import { canonicalJsonBytes, parseJsonBytes } from "./canonical-json.js";
import { BundleError } from "./errors.js";
import { findKey, fromBase64, keyIdOf, type PinnedKey, SIGNING_ALG, type SigningKeyPair, signDetached, toBase64, verifyDetached } from "./sign.js";

export const KEY_STATEMENT_FORMAT = "rl-key-statement/1";

/** What a key statement says: "`new_key` replaces `previous_key_id` from `issued_at` on". */
export interface KeyStatementBody {
  new_key: { key_id: string; alg: typeof SIGNING_ALG; public_key: string };
  previous_key_id: string;
  issued_at: string;
}

/**
 * A new signing key introduced by the key it replaces. Both keys sign the same canonical bytes:
 * the old key's signature is what an agent trusts, the new key's proves that whoever made the
 * statement holds the new secret (no one can name someone else's public key as theirs).
 */
export interface KeyStatement {
  format: typeof KEY_STATEMENT_FORMAT;
  /** base64 of the canonical JSON of {@link KeyStatementBody}. */
  payload: string;
  signatures: { key_id: string; signature: string }[];
}

export interface VerifiedKeyStatement {
  /** The new key, ready to pin. */
  key: PinnedKey & { public_key: string; status: "active" };
  previous_key_id: string;
  issued_at: string;
}

export async function signKeyStatement(newKey: SigningKeyPair, previousKey: SigningKeyPair, issuedAt: Date): Promise<KeyStatement> {
  const body: KeyStatementBody = {
    new_key: { key_id: newKey.keyId, alg: SIGNING_ALG, public_key: toBase64(newKey.publicKey) },
    previous_key_id: previousKey.keyId,
    issued_at: issuedAt.toISOString(),
  };
  const bytes = canonicalJsonBytes(body);
  return {
    format: KEY_STATEMENT_FORMAT,
    payload: toBase64(bytes),
    signatures: [
      { key_id: previousKey.keyId, signature: toBase64(await signDetached(bytes, previousKey.secretKey)) },
      { key_id: newKey.keyId, signature: toBase64(await signDetached(bytes, newKey.secretKey)) },
    ],
  };
}

/**
 * Accepts a statement only when a pinned, non-retired key signed it and is the key it replaces,
 * and the new key signed it too. As with bundles, the bytes are parsed only after the pinned
 * key's signature verified. Throws {@link BundleError}.
 */
export async function verifyKeyStatement(statement: KeyStatement, pinnedKeys: readonly PinnedKey[]): Promise<VerifiedKeyStatement> {
  if (!statement || statement.format !== KEY_STATEMENT_FORMAT || typeof statement.payload !== "string" || !Array.isArray(statement.signatures)) {
    throw new BundleError("unsupported_format", `key statement is not ${KEY_STATEMENT_FORMAT}`);
  }
  const bytes = fromBase64(statement.payload, "statement payload");
  // The endorsement is the first signature that a pinned, non-retired key makes verify.
  const active = new Set(pinnedKeys.filter((k) => k.status !== "retired").map((k) => k.key_id));
  const candidates = statement.signatures.filter((s) => typeof s?.key_id === "string" && active.has(s.key_id));
  if (candidates.length === 0) throw new BundleError("unknown_key", "no pinned, active key signed the key statement");
  const endorsement = candidates.find(
    (s) => typeof s.signature === "string" && verifyDetached(fromBase64(s.signature, "signature"), bytes, findKey(pinnedKeys, s.key_id)),
  );
  if (!endorsement) throw new BundleError("bad_signature", "no signature of a pinned key verifies the key statement");
  const body = parseBody(bytes);
  // A statement seen again after its new key was pinned is endorsed by that key: accept it.
  if (body.previous_key_id !== endorsement.key_id && body.new_key.key_id !== endorsement.key_id) {
    throw new BundleError("malformed", `statement replaces ${body.previous_key_id} but was signed by ${endorsement.key_id}`);
  }
  const newPublic = fromBase64(body.new_key.public_key, "new public key");
  if (newPublic.length !== 32 || keyIdOf(newPublic) !== body.new_key.key_id) {
    throw new BundleError("malformed", `new key id ${body.new_key.key_id} does not match its public key`);
  }
  const own = statement.signatures.find((s) => s?.key_id === body.new_key.key_id);
  if (!own || typeof own.signature !== "string" || !verifyDetached(fromBase64(own.signature, "signature"), bytes, newPublic)) {
    throw new BundleError("bad_signature", `key statement lacks a valid signature of the new key ${body.new_key.key_id}`);
  }
  return {
    key: { key_id: body.new_key.key_id, alg: SIGNING_ALG, public_key: body.new_key.public_key, status: "active" },
    previous_key_id: body.previous_key_id,
    issued_at: body.issued_at,
  };
}

function parseBody(bytes: Uint8Array): KeyStatementBody {
  const b = parseJsonBytes(bytes, "key statement payload") as Partial<KeyStatementBody> | null;
  const ok =
    b !== null &&
    typeof b === "object" &&
    typeof b.previous_key_id === "string" &&
    typeof b.issued_at === "string" &&
    typeof b.new_key === "object" &&
    b.new_key !== null &&
    typeof b.new_key.key_id === "string" &&
    typeof b.new_key.public_key === "string" &&
    b.new_key.alg === SIGNING_ALG;
  if (!ok) throw new BundleError("malformed", "key statement payload lacks new_key or previous_key_id");
  if (b.new_key?.key_id === b.previous_key_id) throw new BundleError("malformed", "key statement names the same key twice");
  return b as KeyStatementBody;
}
