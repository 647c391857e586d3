import { describe, expect, it } from "vitest";
import { type KeyStatement, signKeyStatement, verifyKeyStatement } from "./key-statement.js";
import { signingKeyFromSeed } from "./sign.js";
import { pin, refusal, seed } from "./signing.test-helper.js";

async function setup() {
  const oldKey = await signingKeyFromSeed(seed(1));
  const newKey = await signingKeyFromSeed(seed(2));
  const statement = await signKeyStatement(newKey, oldKey, new Date("2026-11-22T10:00:00.000Z"));
  return { oldKey, newKey, statement };
}

describe("key statements", () => {
  it("a statement signed by the pinned old key and the new key gives the new key to pin", async () => {
    const { oldKey, newKey, statement } = await setup();
    const verified = await verifyKeyStatement(statement, [pin(oldKey)]);
    expect(verified.key).toEqual({ key_id: newKey.keyId, alg: "ed25519", public_key: pin(newKey).public_key, status: "active" });
    expect(verified.previous_key_id).toBe(oldKey.keyId);
    expect(verified.issued_at).toBe("2026-11-22T10:00:00.000Z");
  });

  it("is accepted again once the new key is pinned (idempotent)", async () => {
    const { oldKey, newKey, statement } = await setup();
    await expect(verifyKeyStatement(statement, [pin(oldKey, "retired"), pin(newKey)])).resolves.toBeDefined();
  });

  it("refuses a statement no pinned key signed - unknown_key", async () => {
    const { statement } = await setup();
    const stranger = await signingKeyFromSeed(seed(3));
    expect(await refusal(verifyKeyStatement(statement, [pin(stranger)]))).toBe("unknown_key");
  });

  it("refuses endorsement by a retired key - unknown_key", async () => {
    const { oldKey, statement } = await setup();
    expect(await refusal(verifyKeyStatement(statement, [pin(oldKey, "retired")]))).toBe("unknown_key");
  });

  it("refuses a statement without the new key's own signature - bad_signature", async () => {
    const { oldKey, statement } = await setup();
    const onlyOld: KeyStatement = { ...statement, signatures: statement.signatures.slice(0, 1) };
    expect(await refusal(verifyKeyStatement(onlyOld, [pin(oldKey)]))).toBe("bad_signature");
  });

  it("refuses a statement whose new key was swapped after signing - bad_signature", async () => {
    const { oldKey, statement } = await setup();
    const body = JSON.parse(Buffer.from(statement.payload, "base64").toString("utf8"));
    body.new_key.public_key = pin(await signingKeyFromSeed(seed(4))).public_key;
    const forged = { ...statement, payload: Buffer.from(JSON.stringify(body)).toString("base64") };
    expect(await refusal(verifyKeyStatement(forged, [pin(oldKey)]))).toBe("bad_signature");
  });

  it("refuses a statement whose new key is signed by a key that did not make it - bad_signature", async () => {
    const { oldKey, newKey } = await setup();
    const attacker = await signingKeyFromSeed(seed(5));
    // The attacker names someone else's public key (newKey) but cannot sign for it.
    const statement = await signKeyStatement({ ...newKey, secretKey: attacker.secretKey }, oldKey, new Date());
    expect(await refusal(verifyKeyStatement(statement, [pin(oldKey)]))).toBe("bad_signature");
  });

  it("refuses another format - unsupported_format", async () => {
    const { oldKey, statement } = await setup();
    expect(await refusal(verifyKeyStatement({ ...statement, format: "x" } as unknown as KeyStatement, [pin(oldKey)]))).toBe("unsupported_format");
  });
});
