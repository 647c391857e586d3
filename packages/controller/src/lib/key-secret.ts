import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

const PREFIX_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const SECRET_RE = /^rlk_([A-Za-z0-9]{8})_([A-Za-z0-9_-]{43,})$/;

/** A new key prefix: 8 characters that name the key in lists and logs. */
export function newKeyPrefix(): string {
  const bytes = randomBytes(8);
  let out = "";
  for (const b of bytes) out += PREFIX_ALPHABET[b % PREFIX_ALPHABET.length];
  return out;
}

/** `rlk_<prefix>_<secret>` with 32 random bytes, base64url. */
export function newKeySecret(prefix: string): string {
  return `rlk_${prefix}_${randomBytes(32).toString("base64url")}`;
}

export function parseKeySecret(secret: string): { prefix: string } | null {
  const m = SECRET_RE.exec(secret);
  return m ? { prefix: m[1]! } : null;
}

// The secret carries 256 random bits, so a fast hash is enough: no password stretching is
// needed against brute force, and a lookup stays one indexed read plus one SHA-256.
export function hashKeySecret(secret: string): Buffer {
  return createHash("sha256").update(secret).digest();
}

export function secretMatches(secret: string, hash: Buffer | null | undefined): boolean {
  if (!hash) return false;
  const candidate = hashKeySecret(secret);
  return candidate.length === hash.length && timingSafeEqual(candidate, hash);
}
