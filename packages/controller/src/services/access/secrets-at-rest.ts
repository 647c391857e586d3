import { ADVISORY_LOCKS, lockForTransaction } from "../../db/advisory-locks.js";
import type { Db, Sql } from "../../db/connect.js";
import { listPlainHeaderProfiles, setSealedHeaders } from "../../db/doh-profiles.js";
import { listPlainPeerPasswords, setPeerPasswordSealed } from "../../db/peers.js";
import { type SecretBox, sealEach } from "../../lib/secret-box.js";

export interface CarryOverResult {
  peer_passwords: number;
  doh_profiles: number;
  signing_seeds: number;
  tenant_signing_keys: number;
}

/** What the signing keys' owner (services/deploy/signing.ts) does at start: seal plain seeds, give each tenant its key. */
export interface SigningCarryOver {
  carryOver(tx: Db, now: Date): Promise<{ sealed: number; tenants: number }>;
}

/**
 * Seals what older versions stored in plain text (peer passwords, DoH header values, signing
 * seeds) and gives every tenant its own signing key, in one transaction at start. Each row says
 * whether it is sealed, so a second run (or a second controller starting at once, serialised by
 * the lock) finds nothing to do.
 */
export async function sealSecretsAtRest(sql: Sql, deps: { secretBox: SecretBox; signing: SigningCarryOver; now: Date }): Promise<CarryOverResult> {
  return sql.begin(async (tx) => {
    await lockForTransaction(tx, ADVISORY_LOCKS.sealSecrets);
    const peers = await listPlainPeerPasswords(tx);
    for (const p of peers) await setPeerPasswordSealed(tx, p.id, deps.secretBox.seal(p.password));
    const profiles = await listPlainHeaderProfiles(tx);
    for (const p of profiles) await setSealedHeaders(tx, p.id, sealEach(deps.secretBox, p.headers));
    const keys = await deps.signing.carryOver(tx, deps.now);
    return { peer_passwords: peers.length, doh_profiles: profiles.length, signing_seeds: keys.sealed, tenant_signing_keys: keys.tenants };
  });
}
