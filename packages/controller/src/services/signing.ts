import { readFile } from "node:fs/promises";
import { ConflictError } from "@rlc/shared/errors";
import { generateSigningKey, type SigningKeyPair, signingKeyFromSeed, signKeyStatement } from "@rlc/shared/bundle";
import type { Db, Sql } from "../db/connect.js";
import { findActiveSigningKey, insertSigningKey, listSigningKeys, retireSigningKey, type SigningKeyRow } from "../db/signing-keys.js";
import { isoRequired } from "../lib/time.js";
import type { AuditWriter } from "./audit.js";
import type { RequestContext } from "./context.js";

const SIGNING_LOCK = 7_240_003;

export const toSigningKey = (r: SigningKeyRow) => ({
  key_id: r.key_id,
  alg: "ed25519" as const,
  public_key: r.public_key.toString("base64"),
  status: r.status,
  created_at: isoRequired(r.created_at),
  statement: r.statement,
});

/**
 * The deployment's bundle signing key: from BUNDLE_SIGNING_KEY_FILE (a 32-byte seed, raw or
 * base64) when set, else generated once and kept in the database. Replicas share it.
 */
export function createSigningService(deps: { sql: Sql; audit: AuditWriter; keyFile?: string | undefined }) {
  let fileKey: Promise<SigningKeyPair> | null = null;
  const loadFileKey = async () => {
    const raw = await readFile(deps.keyFile!);
    const text = raw.toString("utf8").trim();
    const seed = raw.length === 32 ? raw : Buffer.from(text, /^[0-9a-f]{64}$/i.test(text) ? "hex" : "base64");
    if (seed.length !== 32) throw new Error("BUNDLE_SIGNING_KEY_FILE must hold a 32-byte Ed25519 seed (raw, hex or base64)");
    return signingKeyFromSeed(seed);
  };

  return {
    /** The pair that signs now; makes (and stores) it on first use. */
    async activeKey(db: Db = deps.sql): Promise<SigningKeyPair> {
      if (deps.keyFile) {
        fileKey ??= loadFileKey();
        const key = await fileKey;
        await insertSigningKey(db, { key_id: key.keyId, public_key: Buffer.from(key.publicKey), seed: null, status: "active", statement: null, created_at: new Date() }).catch(() => {});
        return key;
      }
      const existing = await findActiveSigningKey(db);
      if (existing?.seed) return signingKeyFromSeed(existing.seed);
      const create = async (tx: Db) => {
        await tx`SELECT pg_advisory_xact_lock(${SIGNING_LOCK})`;
        const again = await findActiveSigningKey(tx);
        if (again?.seed) return signingKeyFromSeed(again.seed);
        const key = await generateSigningKey();
        await insertSigningKey(tx, { key_id: key.keyId, public_key: Buffer.from(key.publicKey), seed: Buffer.from(key.seed), status: "active", statement: null, created_at: new Date() });
        return key;
      };
      // Inside the caller's transaction when there is one: a second transaction from the pool
      // would wait for the caller's connection, which on the embedded database (one connection)
      // never comes back — the whole controller froze on the first apply.
      return "savepoint" in db ? create(db) : deps.sql.begin(create);
    },

    async list(db: Db = deps.sql) {
      await this.activeKey(db);
      return { keys: (await listSigningKeys(db)).map(toSigningKey) };
    },

    /** A new active key with a statement signed by the old and the new key; the old one retires. */
    async rotate(tx: Db, ctx: RequestContext) {
      if (deps.keyFile) {
        throw new ConflictError("rotation is not available while BUNDLE_SIGNING_KEY_FILE pins the signing key");
      }
      await tx`SELECT pg_advisory_xact_lock(${SIGNING_LOCK})`;
      const current = await findActiveSigningKey(tx);
      const old = current?.seed ? await signingKeyFromSeed(current.seed) : await generateSigningKey();
      const next = await generateSigningKey();
      const statement = await signKeyStatement(next, old, ctx.now);
      if (current) await retireSigningKey(tx, current.key_id, ctx.now);
      await insertSigningKey(tx, {
        key_id: next.keyId,
        public_key: Buffer.from(next.publicKey),
        seed: Buffer.from(next.seed),
        status: "active",
        statement: statement as unknown as Record<string, unknown>,
        created_at: ctx.now,
      });
      await deps.audit.record(tx, ctx, {
        action: "rotate",
        resource_type: "signing_key",
        resource_id: next.keyId,
        summary: `bundle signing key rotated: ${current?.key_id ?? "none"} → ${next.keyId}`,
        severity: "warning",
        changes: { active_key_id: { from: current?.key_id ?? null, to: next.keyId } },
      });
      const [row] = (await listSigningKeys(tx)).filter((k) => k.key_id === next.keyId);
      return toSigningKey(row!);
    },
  };
}

export type SigningService = ReturnType<typeof createSigningService>;
