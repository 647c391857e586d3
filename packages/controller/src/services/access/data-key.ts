import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { unlink } from "node:fs/promises";
import { join } from "node:path";
import type { Sql } from "../../db/connect.js";
import { findAnySealedSeed, findDataKeyId, recordDataKeyId } from "../../db/data-key.js";
import { createSecretBox, loadDataKey } from "../../lib/secret-box.js";

/** The data key's id: 16 hex digits of a SHA-256 over it, which names the key without revealing it. */
export function dataKeyId(key: Buffer): string {
  return createHash("sha256").update("route-list data key id\0").update(key).digest("hex").slice(0, 16);
}

/** The process's data key cannot open this database's secrets: it must not start. */
export class DataKeyMismatchError extends Error {
  override name = "DataKeyMismatchError";
}

const advice =
  "every controller process on one database needs the same data key: copy the key file of the process that first started " +
  "(APP_DATA_DIR/secret.key) to each machine and point APP_SECRET_KEY_FILE at it";

/**
 * The data key, checked against the database: the first controller records its key's id; every
 * later one must hold the same key. A process that has no key while the database names one
 * refuses to start rather than make a key of its own (replicas that each made their own key
 * answered 500 for every sealed secret another had written); so does one whose key differs, or
 * (on a database from before the id was recorded) one whose key cannot open a sealed seed.
 */
export async function openDataKey(sql: Sql, o: { file?: string | undefined; dataDir: string }) {
  const recorded = await findDataKeyId(sql);
  const path = o.file ?? join(o.dataDir, "secret.key");
  if (recorded && !o.file && !existsSync(path)) {
    throw new DataKeyMismatchError(
      `this database's secrets are sealed with data key ${recorded} and this process has none (${path} does not exist): ${advice}`,
    );
  }
  const loaded = await loadDataKey({ file: o.file, dataDir: o.dataDir });
  const keyId = dataKeyId(loaded.key);
  const refuse = async (why: string) => {
    // A key this process just made and cannot use is not left behind to be mistaken for one.
    if (loaded.created) await unlink(loaded.path).catch(() => {});
    return new DataKeyMismatchError(`${why}: ${advice}`);
  };
  if (recorded && recorded !== keyId)
    throw await refuse(`the data key ${path} (id ${keyId}) is not the one that sealed this database's secrets (id ${recorded})`);
  if (!recorded) {
    const sealed = await findAnySealedSeed(sql);
    if (sealed) {
      try {
        createSecretBox(loaded.key).open(sealed);
      } catch {
        throw await refuse(`the data key ${path} (id ${keyId}) does not open the secrets this database holds`);
      }
    }
    const winner = await recordDataKeyId(sql, keyId);
    if (winner !== keyId) throw await refuse(`another controller recorded data key ${winner} a moment ago; this process's key is ${keyId}`);
  }
  return { ...loaded, keyId };
}
