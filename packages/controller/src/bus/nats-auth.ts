import { chmod, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Algorithms, encodeAccount, encodeOperator, encodeUser, fmtCreds, type User } from "@nats-io/jwt";
import { createAccount, createOperator, createUser, type KeyPair } from "@nats-io/nkeys";
import { subjectToken } from "@rlc/proto";
import { controllerExports } from "./nats-accounts.js";
import { CLAIMS_UPDATE_SUBJECT } from "./nats-tenants.js";

/**
 * NATS decentralized authentication, one account per tenant: an operator trusts the system
 * account, the controller's account (`route-list`) and, pushed by the controller as tenants
 * appear, one account per tenant (`nats-accounts.ts`). Every user is an nkey pair plus a JWT
 * naming what it may publish and subscribe to; the server checks the JWT's chain up to the
 * operator and enforces those permissions, so the controller never tells the server about a user
 * (no server reload when an agent enrolls or a tenant is made).
 */

/** Everything the controller publishes or subscribes to in its own account lives under `rl.`. */
export const controllerPermissions = {
  pub: { allow: ["rl.>", "_INBOX.>"] },
  sub: { allow: ["rl.>", "_INBOX.>"] },
} satisfies Partial<User>;

/** The controller's system-account user: it pushes account JWTs (`nsc push`) and reads the answers. */
export const systemPushPermissions = {
  pub: { allow: [CLAIMS_UPDATE_SUBJECT, "$SYS.REQ.ACCOUNT.*.CLAIMS.UPDATE"] },
  sub: { allow: ["_INBOX.>"] },
} satisfies Partial<User>;

const decoder = new TextDecoder();

/** Ids go into subjects verbatim: a dot or a wildcard in one would widen a permission. */
export const assertSubjectToken = subjectToken;

/** A user issued by the account itself (no signing key): the controller's own users, made once. */
async function userCreds(name: string, issuer: KeyPair, permissions: Partial<User>): Promise<string> {
  const user = createUser();
  const jwt = await encodeUser(name, user, issuer, permissions);
  return decoder.decode(fmtCreds(jwt, user));
}

export interface NatsInitResult {
  dir: string;
  operator: string;
  account: string;
  /** Where each file was written. */
  files: Record<
    | "server_config"
    | "operator_jwt"
    | "account_jwt"
    | "controller_creds"
    | "system_creds"
    | "operator_signing_seed"
    | "operator_seed"
    | "account_seed"
    | "system_seed",
    string
  >;
}

const ACCOUNT_NAME = "route-list";

/**
 * `controller nats init DIR`: a fresh operator with a signing key, its system account, the
 * controller's account (exporting the tenants' events and wake-ups), the controller's user, a
 * system user that pushes tenant accounts, and a server configuration that trusts them: a
 * NATS-based (`full`) resolver, which takes the tenant accounts the controller pushes without a
 * restart, with the system and controller accounts preloaded. Refuses to overwrite anything.
 */
export async function initNatsAuthority(dir: string, options: { listen?: string; http?: string | null; resolverLimit?: number } = {}): Promise<NatsInitResult> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const operator = createOperator();
  const operatorSigning = createOperator();
  const system = createAccount();
  const account = createAccount();
  const operatorJwt = await encodeOperator(
    "rl-operator",
    operator,
    { system_account: system.getPublicKey(), signing_keys: [operatorSigning.getPublicKey()] },
    { algorithm: Algorithms.v2 },
  );
  // Named limits: the JWT library's defaults would leave the system account no connection at all.
  const unlimited = { subs: -1, data: -1, payload: -1, imports: -1, exports: -1, wildcards: true, conn: -1, leaf: -1 };
  const systemJwt = await encodeAccount(
    "SYS",
    system,
    { limits: { ...unlimited, mem_storage: 0, disk_storage: 0, streams: 0, consumer: 0 } },
    { signer: operator },
  );
  const accountJwt = await encodeAccount(
    ACCOUNT_NAME,
    account,
    {
      exports: controllerExports,
      // No JetStream here: each tenant's event stream lives in the tenant's own account.
      limits: {
        ...unlimited,
        mem_storage: 0,
        disk_storage: 0,
        streams: 0,
        consumer: 0,
      },
    },
    { signer: operator },
  );
  const controllerCreds = await userCreds("rl-controller", account, controllerPermissions);
  const systemCreds = await userCreds("rl-controller-push", system, systemPushPermissions);
  const jwtDir = join(dir, "jwt");
  const serverConf = [
    "# nats-server configuration trusting the route-list operator (written by `controller nats init`).",
    "# Users are not listed here: the controller signs them and the server checks each user JWT up",
    "# to this operator. Tenant accounts are pushed by the controller (NATS_SYSTEM_CREDS_FILE) into",
    "# the resolver's directory; every server of a cluster needs the same trust lines.",
    `listen: ${options.listen ?? "0.0.0.0:4222"}`,
    ...(options.http === null ? [] : [`http: ${options.http ?? "127.0.0.1:8222"}`]),
    `jetstream { store_dir: ${JSON.stringify(join(dir, "jetstream"))} }`,
    `operator: ${operatorJwt}`,
    `system_account: ${system.getPublicKey()}`,
    "resolver {",
    "  type: full",
    `  dir: ${JSON.stringify(jwtDir)}`,
    "  allow_delete: false",
    '  interval: "2m"',
    `  limit: ${options.resolverLimit ?? 100_000}`,
    "}",
    "resolver_preload: {",
    `  ${system.getPublicKey()}: ${systemJwt}`,
    `  ${account.getPublicKey()}: ${accountJwt}`,
    "}",
    "",
  ].join("\n");
  const files = {
    server_config: join(dir, "nats-server.conf"),
    operator_jwt: join(dir, "operator.jwt"),
    account_jwt: join(dir, "account.jwt"),
    controller_creds: join(dir, "controller.creds"),
    system_creds: join(dir, "system.creds"),
    operator_signing_seed: join(dir, "operator-signing.nk"),
    operator_seed: join(dir, "operator.nk"),
    account_seed: join(dir, "account.nk"),
    system_seed: join(dir, "system-account.nk"),
  };
  const seed = (k: KeyPair) => `${decoder.decode(k.getSeed())}\n`;
  const contents: [string, string, number][] = [
    [files.server_config, serverConf, 0o644],
    [files.operator_jwt, `${operatorJwt}\n`, 0o644],
    [files.account_jwt, `${accountJwt}\n`, 0o644],
    [files.controller_creds, controllerCreds, 0o600],
    [files.system_creds, systemCreds, 0o600],
    [files.operator_signing_seed, seed(operatorSigning), 0o600],
    [files.operator_seed, seed(operator), 0o600],
    [files.account_seed, seed(account), 0o600],
    [files.system_seed, seed(system), 0o600],
  ];
  await mkdir(jwtDir, { recursive: true, mode: 0o700 });
  for (const [path, text, mode] of contents) {
    // "wx": an existing file is an existing authority; replacing it would lock every user out.
    await writeFile(path, text, { flag: "wx", mode }).catch((error: NodeJS.ErrnoException) => {
      if (error.code === "EEXIST") throw new Error(`${path} exists: ${dir} already holds a NATS authority; refusing to overwrite it`);
      throw error;
    });
    await chmod(path, mode);
  }
  return { dir, operator: operator.getPublicKey(), account: account.getPublicKey(), files };
}
