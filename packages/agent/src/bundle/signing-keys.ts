import type { SigningKeyJson } from "@rlc/proto";
import { BundleError, type KeyStatement, keyIdOf, verifyKeyStatement } from "@rlc/shared/bundle";
import type { Logger } from "../log.js";
import type { StateStore, StoredKey } from "../state.js";

/**
 * The keys to pin at enrollment: taken as the controller lists them (the enrollment token
 * vouches for the answer), after checking that each id is the hash of its key.
 */
export function keysFromEnrollment(listed: readonly SigningKeyJson[]): StoredKey[] {
  const keys = listed.map((k) => {
    const raw = Buffer.from(k.public_key, "base64");
    if (k.alg !== "ed25519" || raw.length !== 32 || raw.toString("base64") !== k.public_key || keyIdOf(raw) !== k.key_id) {
      throw new BundleError("malformed", `signing key ${k.key_id} from enrollment is not an Ed25519 key with a matching id`);
    }
    return { key_id: k.key_id, alg: "ed25519" as const, public_key: k.public_key, status: k.status };
  });
  if (!keys.some((k) => k.status === "active")) throw new BundleError("unknown_key", "enrollment named no active signing key");
  return keys;
}

export interface KeyUpdate {
  keys: StoredKey[];
  added: string[];
  retired: string[];
  /** Listed keys that no statement of a pinned key vouches for; never pinned. */
  ignored: string[];
}

/**
 * Folds `GET /v1/nodes/signing-keys` into the pinned set. A new key is pinned only through its
 * key statement, signed by a key already pinned (statements may chain: A→B→C is taken in one
 * call). A key the controller lists as retired is marked retired here too: retiring only ever
 * takes trust away, so the listing alone may do it.
 */
export async function updatePinnedKeys(pinned: readonly StoredKey[], listed: readonly SigningKeyJson[]): Promise<KeyUpdate> {
  const keys = pinned.map((k) => ({ ...k }));
  const retired: string[] = [];
  const added: string[] = [];
  for (;;) {
    let progress = false;
    for (const candidate of listed) {
      if (keys.some((k) => k.key_id === candidate.key_id) || !candidate.statement) continue;
      try {
        const verified = await verifyKeyStatement(candidate.statement as KeyStatement, keys);
        if (verified.key.key_id !== candidate.key_id || verified.key.public_key !== candidate.public_key) continue;
        keys.push({ key_id: candidate.key_id, alg: "ed25519", public_key: candidate.public_key, status: "active" });
        added.push(candidate.key_id);
        progress = true;
      } catch {
        // Not (yet) endorsed by a pinned key; a later pass may pin its predecessor first.
      }
    }
    if (!progress) break;
  }
  for (const listedKey of listed) {
    const key = keys.find((k) => k.key_id === listedKey.key_id);
    if (key && listedKey.status === "retired" && key.status !== "retired") {
      key.status = "retired";
      retired.push(key.key_id);
    }
  }
  const ignored = [...new Set(listed.filter((l) => !keys.some((k) => k.key_id === l.key_id)).map((l) => l.key_id))];
  return { keys, added, retired, ignored };
}

/**
 * The one place the pinned keys change after enrollment: the controller's listing folded in
 * (updatePinnedKeys) and written to the state directory. Answers whether anything changed (a
 * key pinned or retired), so that a bundle signed by an unknown key is verified again only then.
 */
export async function refreshPinnedKeys(deps: { state: StateStore; signingKeys(): Promise<SigningKeyJson[]>; log: Logger }): Promise<boolean> {
  const update = await updatePinnedKeys(await deps.state.readSigningKeys(), await deps.signingKeys());
  if (update.added.length === 0 && update.retired.length === 0) return false;
  await deps.state.writeSigningKeys(update.keys);
  deps.log.info("signing keys updated", { added: update.added, retired: update.retired });
  return true;
}
