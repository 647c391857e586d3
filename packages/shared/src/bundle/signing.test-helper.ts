// What the bundle and key statement tests share (not part of the build): the tenant and
// speaker they sign for, their clock, deterministic keys and the code a refusal carries.
import { expect } from "vitest";
import { BundleError, type BundleErrorCode } from "./errors.js";
import type { PinnedKey, SigningKeyPair } from "./sign.js";

export const TENANT = "0192f3a4-0000-7000-8000-000000000001";
export const SPEAKER = "0192f3a4-0000-7000-8000-0000000000aa";
export const NOW = Date.parse("2026-11-22T10:00:00.000Z");

/** A 32-byte seed of `n`s: the same key pair for the same n. */
export const seed = (n: number) => new Uint8Array(32).fill(n);

/** `key` as an agent pins it from `GET /v1/nodes/signing-keys`. */
export const pin = (key: Pick<SigningKeyPair, "keyId" | "publicKey">, status: "active" | "retired" = "active"): PinnedKey => ({
  key_id: key.keyId,
  alg: "ed25519",
  public_key: Buffer.from(key.publicKey).toString("base64"),
  status,
});

/** The code of the BundleError that `promise` rejects with (fails the test if it does not). */
export async function refusal(promise: Promise<unknown>): Promise<BundleErrorCode> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(BundleError);
  return (error as BundleError).code;
}
