import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Algorithms, encodeAccount, encodeOperator, encodeUser, fmtCreds, parseCreds, type User } from "@nats-io/jwt";
import { createAccount, createOperator, createUser, fromSeed, type KeyPair } from "@nats-io/nkeys";
import { eventStreamName, eventSubjects, internalSubjects, monitoringInboxPrefix, subjectToken } from "@rlc/proto";

/**
 * NATS decentralized authentication: an operator trusts one account ("route-list"); the account
 * lists a signing key, which the controller holds and signs users with. Every user is an nkey
 * pair plus a JWT naming what it may publish and subscribe to; the server checks the JWT's chain
 * up to the operator and enforces those permissions, so the controller never tells the server
 * about a user (no server reload when an agent enrolls).
 */

/**
 * Everything the controller publishes or subscribes to lives under `rl.`; it also keeps the
 * tenants' event streams (`RL_EVENTS_V1_<tenant>`: stream info, create, update).
 */
export const controllerPermissions = {
  pub: { allow: ["rl.>", "_INBOX.>", "$JS.API.INFO", "$JS.API.STREAM.INFO.*", "$JS.API.STREAM.CREATE.*", "$JS.API.STREAM.UPDATE.*"] },
  sub: { allow: ["rl.>", "_INBOX.>"] },
} satisfies Partial<User>;

/**
 * An agent hears its own speaker's wake-ups and publishes nothing: it reports over gRPC or
 * HTTP, and the controller publishes what it recorded (an empty allow list would mean "anything").
 */
export function agentPermissions(tenantId: string, speakerId: string): Partial<User> {
  return { sub: { allow: [internalSubjects.notify(tenantId, speakerId)] }, pub: { deny: [">"] } };
}

/**
 * A dashboard reads one tenant's events, live (`rl.v1.<tenant>.>`) and from the tenant's stream:
 * it may create, read and delete consumers of that stream and fetch from them, with replies on
 * its tenant's own inbox prefix, and publish nothing else (no event, no wake-up). The stream
 * holds only that tenant's subjects, so whatever filter a consumer names, it sees that tenant only.
 */
export function monitoringPermissions(tenantId: string): Partial<User> {
  const stream = eventStreamName(tenantId);
  return {
    sub: { allow: [eventSubjects.tenant(tenantId), `${monitoringInboxPrefix(tenantId)}.>`] },
    pub: {
      allow: [
        `$JS.API.STREAM.INFO.${stream}`,
        `$JS.API.CONSUMER.CREATE.${stream}`,
        `$JS.API.CONSUMER.CREATE.${stream}.>`,
        `$JS.API.CONSUMER.DURABLE.CREATE.${stream}.*`,
        `$JS.API.CONSUMER.INFO.${stream}.*`,
        `$JS.API.CONSUMER.DELETE.${stream}.*`,
        `$JS.API.CONSUMER.NAMES.${stream}`,
        `$JS.API.CONSUMER.LIST.${stream}`,
        `$JS.API.CONSUMER.MSG.NEXT.${stream}.*`,
        `$JS.ACK.${stream}.>`,
        // Flow-control answers of a push consumer (what an ordered push subscription uses).
        `$JS.FC.${stream}.>`,
      ],
    },
  };
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Issues user credentials (a `.creds` text: the user JWT and its nkey seed) signed by the account's signing key. */
export interface NatsCredentialIssuer {
  /** The account's public key (`A…`). */
  readonly accountId: string;
  issue(name: string, permissions: Partial<User>, options?: { expiresAt?: Date }): Promise<{ creds: string; user: string; expiresAt: Date | null }>;
}

/** Ids go into subjects verbatim: a dot or a wildcard in one would widen a permission. */
export const assertSubjectToken = subjectToken;

export function createCredentialIssuer(signingKey: KeyPair, accountId: string): NatsCredentialIssuer {
  if (!accountId.startsWith("A")) throw new Error("the NATS account id must be an account public key (A…)");
  return {
    accountId,
    async issue(name, permissions, options = {}) {
      const user = createUser();
      const exp = options.expiresAt ? Math.floor(options.expiresAt.getTime() / 1000) : undefined;
      // bearer_token stays false: the server makes the client sign its nonce with the seed.
      const jwt = await encodeUser(name, user, accountId, permissions, { signer: signingKey, ...(exp ? { exp } : {}) });
      return { creds: decoder.decode(fmtCreds(jwt, user)), user: user.getPublicKey(), expiresAt: options.expiresAt ?? null };
    },
  };
}

/** The issuer from NATS_ACCOUNT_SEED_FILE (the signing key's seed) and the account named by the controller's own creds. */
export async function loadCredentialIssuer(accountSeedFile: string, controllerCredsFile: string): Promise<NatsCredentialIssuer> {
  const seed = (await readFile(accountSeedFile, "utf8")).trim();
  let key: KeyPair;
  try {
    key = fromSeed(encoder.encode(seed));
  } catch {
    throw new Error(`${accountSeedFile} does not hold an nkey seed`);
  }
  if (!seed.startsWith("SA")) throw new Error(`${accountSeedFile} holds an nkey seed, but not an account's (SA…)`);
  const { aid } = await parseCreds(await readFile(controllerCredsFile)).catch(() => {
    throw new Error(`${controllerCredsFile} is not a NATS .creds file`);
  });
  return createCredentialIssuer(key, aid);
}

export interface NatsInitResult {
  dir: string;
  operator: string;
  account: string;
  /** Where each file was written. */
  files: Record<
    "server_config" | "operator_jwt" | "account_jwt" | "controller_creds" | "account_signing_seed" | "operator_seed" | "account_seed" | "system_seed",
    string
  >;
}

const ACCOUNT_NAME = "route-list";

/**
 * `controller nats init DIR`: a fresh operator, its system account, the route-list account with
 * a signing key, the controller's user, and a server configuration that trusts them (the account
 * JWTs preloaded in a MEMORY resolver). Refuses to overwrite anything.
 */
export async function initNatsAuthority(dir: string, options: { listen?: string; http?: string | null } = {}): Promise<NatsInitResult> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const operator = createOperator();
  const system = createAccount();
  const account = createAccount();
  const signing = createAccount();
  const operatorJwt = await encodeOperator("rl-operator", operator, { system_account: system.getPublicKey() }, { algorithm: Algorithms.v2 });
  const systemJwt = await encodeAccount("SYS", system, {}, { signer: operator });
  const accountJwt = await encodeAccount(
    ACCOUNT_NAME,
    account,
    {
      signing_keys: [signing.getPublicKey()],
      // A limits object leaves every limit it omits at 0 (no connections at all): name them all.
      // JetStream is allowed without limits; a stream is the account's to make.
      limits: {
        subs: -1,
        data: -1,
        payload: -1,
        imports: -1,
        exports: -1,
        wildcards: true,
        conn: -1,
        leaf: -1,
        mem_storage: -1,
        disk_storage: -1,
        streams: -1,
        consumer: -1,
      },
    },
    { signer: operator },
  );
  const controller = await createCredentialIssuer(signing, account.getPublicKey()).issue("rl-controller", controllerPermissions);
  const serverConf = [
    "# nats-server configuration trusting the route-list operator (written by `controller nats init`).",
    "# Users are not listed here: the controller signs them with the account's signing key and the",
    "# server checks each user JWT up to this operator.",
    `listen: ${options.listen ?? "0.0.0.0:4222"}`,
    ...(options.http === null ? [] : [`http: ${options.http ?? "127.0.0.1:8222"}`]),
    `jetstream { store_dir: ${JSON.stringify(join(dir, "jetstream"))} }`,
    `operator: ${operatorJwt}`,
    `system_account: ${system.getPublicKey()}`,
    "resolver: MEMORY",
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
    account_signing_seed: join(dir, "account-signing.nk"),
    operator_seed: join(dir, "operator.nk"),
    account_seed: join(dir, "account.nk"),
    system_seed: join(dir, "system-account.nk"),
  };
  const contents: [string, string, number][] = [
    [files.server_config, serverConf, 0o644],
    [files.operator_jwt, `${operatorJwt}\n`, 0o644],
    [files.account_jwt, `${accountJwt}\n`, 0o644],
    [files.controller_creds, controller.creds, 0o600],
    [files.account_signing_seed, `${decoder.decode(signing.getSeed())}\n`, 0o600],
    [files.operator_seed, `${decoder.decode(operator.getSeed())}\n`, 0o600],
    [files.account_seed, `${decoder.decode(account.getSeed())}\n`, 0o600],
    [files.system_seed, `${decoder.decode(system.getSeed())}\n`, 0o600],
  ];
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
