import { type SigningKeyPair, signKeyStatement } from "@rlc/shared/bundle";
import { describe, expect, it } from "vitest";
import { storedKey, testKey } from "../../../../test/helpers/agent-fakes.js";
import { keysFromEnrollment, updatePinnedKeys } from "./signing-keys.js";

const listed = (k: ReturnType<typeof storedKey>, statement: unknown = null, status: "active" | "retired" = k.status) => ({
  ...k,
  status,
  created_at: null,
  statement,
});

/** `newKey` endorsed by `oldKey`: the statement of a rotation from one to the other. */
const endorsed = (newKey: SigningKeyPair, oldKey: SigningKeyPair) => signKeyStatement(newKey, oldKey, new Date());
/** What updatePinnedKeys makes of the controller's `listing` for an agent that pinned `pinned` alone. */
const pinnedAfter = (pinned: SigningKeyPair, listing: ReturnType<typeof listed>[]) => updatePinnedKeys([storedKey(pinned)], listing);

describe("signing keys", () => {
  it("updatePinnedKeys - pins a chain of rotations A→B→C in one call, whatever the listing order", async () => {
    const [a, b, c] = await Promise.all([testKey(1), testKey(2), testKey(3)]);
    const [ab, bc] = await Promise.all([endorsed(b, a), endorsed(c, b)]);
    const update = await pinnedAfter(a, [listed(storedKey(c), bc), listed(storedKey(b), ab, "retired"), listed(storedKey(a), null, "retired")]);
    expect(update.added.sort()).toEqual([b.keyId, c.keyId].sort());
    expect(update.retired.sort()).toEqual([a.keyId, b.keyId].sort());
    expect(update.keys.find((k) => k.key_id === c.keyId)?.status).toBe("active");
    expect(update.ignored).toEqual([]);
  });

  it("updatePinnedKeys - never pins a key without a statement of a pinned key, nor one whose statement names another key", async () => {
    const [a, b, x] = await Promise.all([testKey(1), testKey(2), testKey(4)]);
    const [xSignsB, ab] = await Promise.all([endorsed(b, x), endorsed(b, a)]);
    const update = await pinnedAfter(a, [listed(storedKey(x)), listed(storedKey(b), xSignsB), listed({ ...storedKey(x), key_id: x.keyId }, ab)]);
    expect(update.keys).toEqual([storedKey(a)]);
    expect(update.ignored.sort()).toEqual([b.keyId, x.keyId].sort());
  });

  it("keysFromEnrollment - refuses a key whose id is not the hash of its public key", async () => {
    const a = await testKey(1);
    expect(keysFromEnrollment([listed(storedKey(a))])).toEqual([storedKey(a)]);
    expect(() => keysFromEnrollment([listed({ ...storedKey(a), key_id: "0000000000000000" })])).toThrow(/matching id/);
    expect(() => keysFromEnrollment([listed(storedKey(a), null, "retired")])).toThrow(/no active signing key/);
  });
});
