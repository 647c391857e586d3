import { readFile } from "node:fs/promises";
import { jetstreamManager } from "@nats-io/jetstream";
import { encodeUser, fmtCreds, parseCreds, type User } from "@nats-io/jwt";
import { createUser, fromSeed, type KeyPair } from "@nats-io/nkeys";
import { type ConnectionOptions, connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import type { StreamSpec } from "./bus.js";
import { streamKeeperPermissions, type TenantAccount, type TenantAccountLimits, tenantAccount } from "./nats-accounts.js";
import { ensureStreamOn } from "./nats-bus.js";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The subject on which every server of a `full` resolver takes a new or updated account JWT (what `nsc push` sends). */
export const CLAIMS_UPDATE_SUBJECT = "$SYS.REQ.CLAIMS.UPDATE";

/** Issues users of the tenants' accounts and keeps those accounts on the NATS servers. */
export interface NatsTenantAuthority {
  /** The controller account's public key (`A…`): the tenant accounts import from it. */
  readonly controllerAccountId: string;
  /** The tenant's account public key. */
  accountOf(tenantId: string): string;
  /** Pushes the tenant's account JWT to the servers, once per process (again after a failure, or after `forgetPushed`). */
  ensureAccount(tenantId: string): Promise<void>;
  /** Forgets which accounts were pushed: after a reconnect, to a server that may have lost them. */
  forgetPushed(): void;
  /** A user of the tenant's account (a `.creds` text), signed by the account's signing key. */
  issue(
    tenantId: string,
    name: string,
    permissions: Partial<User>,
    options?: { expiresAt?: Date },
  ): Promise<{ creds: string; user: string; account: string; expiresAt: Date | null }>;
  /** Creates or updates the tenant's event stream, inside the tenant's account. */
  ensureStream(tenantId: string, spec: StreamSpec): Promise<"created" | "updated" | "unchanged">;
  close(): Promise<void>;
}

export interface NatsTenantAuthorityOptions {
  url: string;
  /** The operator signing key (`SO…`): signs the tenant account JWTs and derives their keys. */
  operatorSigning: KeyPair;
  controllerAccountId: string;
  /** A system-account user allowed to publish account JWTs (`.creds` text). */
  systemCreds: string;
  limits: TenantAccountLimits;
  connect?: (options: ConnectionOptions) => Promise<NatsConnection>;
}

async function issueUser(account: TenantAccount, name: string, permissions: Partial<User>, expiresAt?: Date) {
  const user = createUser();
  const exp = expiresAt ? Math.floor(expiresAt.getTime() / 1000) : undefined;
  // bearer_token stays false: the server makes the client sign its nonce with the seed.
  const jwt = await encodeUser(name, user, account.accountId, permissions, { signer: account.signing, ...(exp ? { exp } : {}) });
  return { creds: decoder.decode(fmtCreds(jwt, user)), user: user.getPublicKey() };
}

/** The answer of `$SYS.REQ.CLAIMS.UPDATE`: `{data: {code: 200, …}}` or `{error: {code, description}}`. */
function claimsUpdateProblem(answer: unknown): string | null {
  const a = answer as { data?: { code?: number }; error?: { description?: string; code?: number } } | null;
  if (a?.error) return a.error.description ?? `code ${a.error.code}`;
  if (a?.data && (a.data.code === undefined || a.data.code < 300)) return null;
  return `unexpected answer ${JSON.stringify(answer)}`;
}

export function createNatsTenantAuthority(o: NatsTenantAuthorityOptions): NatsTenantAuthority {
  const connectFn = o.connect ?? connect;
  const accounts = new Map<string, TenantAccount>();
  const pushed = new Map<string, Promise<void>>();
  let system: Promise<NatsConnection> | null = null;
  const servers = o.url.split(",");

  const accountFor = (tenantId: string) => {
    let a = accounts.get(tenantId);
    if (!a) {
      a = tenantAccount(o.operatorSigning, o.controllerAccountId, tenantId, o.limits);
      accounts.set(tenantId, a);
    }
    return a;
  };
  const systemConnection = () => {
    if (system) return system;
    const opening: Promise<NatsConnection> = connectFn({
      servers,
      name: "rl-controller system",
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      authenticator: credsAuthenticator(encoder.encode(o.systemCreds)),
    }).catch((error: unknown) => {
      system = null;
      throw error;
    });
    system = opening;
    // nats.js gives up on a connection after the same authentication error twice (a server that
    // does not trust the system user until its configuration is put right): the next push opens
    // a new one instead of failing on the closed one for the rest of the process's life.
    void opening
      .then((nc) => nc.closed())
      .then(
        () => {
          if (system === opening) system = null;
        },
        () => {},
      );
    return opening;
  };

  const authority: NatsTenantAuthority = {
    controllerAccountId: o.controllerAccountId,
    accountOf: (tenantId) => accountFor(tenantId).accountId,
    ensureAccount(tenantId) {
      let p = pushed.get(tenantId);
      if (!p) {
        p = (async () => {
          const nc = await systemConnection();
          const answer = await nc.request(CLAIMS_UPDATE_SUBJECT, await accountFor(tenantId).jwt(), { timeout: 5000 });
          const problem = claimsUpdateProblem(answer.json());
          if (problem) throw new Error(`NATS refused the account of tenant ${tenantId}: ${problem}`);
        })();
        p.catch(() => pushed.delete(tenantId));
        pushed.set(tenantId, p);
      }
      return p;
    },
    forgetPushed() {
      pushed.clear();
    },
    async issue(tenantId, name, permissions, options = {}) {
      await authority.ensureAccount(tenantId);
      const account = accountFor(tenantId);
      const issued = await issueUser(account, name, permissions, options.expiresAt);
      return { ...issued, account: account.accountId, expiresAt: options.expiresAt ?? null };
    },
    async ensureStream(tenantId, spec) {
      // A short-lived user of the tenant's account that may keep this stream only.
      const { creds } = await authority.issue(tenantId, "rl-controller stream keeper", streamKeeperPermissions(tenantId), {
        expiresAt: new Date(Date.now() + 5 * 60_000),
      });
      const nc = await connectFn({ servers, name: `rl-controller ${tenantId}`, reconnect: false, authenticator: credsAuthenticator(encoder.encode(creds)) });
      try {
        return await ensureStreamOn(await jetstreamManager(nc, { checkAPI: false }), spec);
      } finally {
        await nc.close().catch(() => {});
      }
    },
    async close() {
      const nc = await system?.catch(() => null);
      await nc?.close().catch(() => {});
    },
  };
  return authority;
}

/** The authority from the files `controller nats init` writes. */
export async function loadNatsTenantAuthority(o: {
  url: string;
  operatorSeedFile: string;
  controllerCredsFile: string;
  systemCredsFile: string;
  limits: TenantAccountLimits;
  connect?: (options: ConnectionOptions) => Promise<NatsConnection>;
}): Promise<NatsTenantAuthority> {
  const seed = (await readFile(o.operatorSeedFile, "utf8")).trim();
  if (!seed.startsWith("SO")) throw new Error(`${o.operatorSeedFile} does not hold an operator signing key seed (SO…)`);
  let operatorSigning: KeyPair;
  try {
    operatorSigning = fromSeed(encoder.encode(seed));
  } catch {
    throw new Error(`${o.operatorSeedFile} does not hold an nkey seed`);
  }
  const { aid } = await parseCreds(await readFile(o.controllerCredsFile)).catch(() => {
    throw new Error(`${o.controllerCredsFile} is not a NATS .creds file`);
  });
  const systemCreds = await readFile(o.systemCredsFile, "utf8");
  await parseCreds(encoder.encode(systemCreds)).catch(() => {
    throw new Error(`${o.systemCredsFile} is not a NATS .creds file`);
  });
  return createNatsTenantAuthority({
    url: o.url,
    operatorSigning,
    controllerAccountId: aid,
    systemCreds,
    limits: o.limits,
    ...(o.connect ? { connect: o.connect } : {}),
  });
}
