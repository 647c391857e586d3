import { hkdfSync } from "node:crypto";
import { encodeAccount, type User } from "@nats-io/jwt";
import { fromSeed, type KeyPair, Prefix } from "@nats-io/nkeys";
import { Codec } from "@nats-io/nkeys/lib/codec.js";
import { eventStreamName, eventSubjects, internalSubjects, monitoringInboxPrefix, subjectToken } from "@rlc/proto";

/**
 * One NATS account per tenant. A tenant's agents, its monitoring users and its event stream live
 * in the tenant's own account, so whatever subject one of them names — a consumer's
 * `deliver_subject`, the reply subject of a JetStream API request, a plain publish — it lands in
 * that tenant's namespace and nowhere else: NATS checks neither of the first two against a
 * user's permissions, but it never crosses an account boundary without an import.
 *
 * The controller's own account (`route-list`) keeps the internal subjects (`rl.jobs.wake`,
 * `rl.<tenant>.lookup.changed`) and exports two streams; each tenant account imports the part
 * that is its own: its events (`rl.v1.<tenant>.>`) and its speakers' wake-ups
 * (`rl.<tenant>.speakers.*.notify`). Nothing flows from a tenant account back.
 *
 * A tenant account's keys are derived from the operator signing key and the tenant id (HKDF), so
 * every replica computes the same account without storing it; its JWT is signed by the operator
 * signing key and pushed to the NATS servers (a `full` resolver) through the system account.
 */

/** The controller account's exports the tenant accounts import from. */
export const controllerExports = [
  { name: "events", subject: eventSubjects.tenant("*"), type: "stream" as const },
  { name: "wake-ups", subject: internalSubjects.notify("*", "*"), type: "stream" as const },
];

/** What one tenant account may use; every tenant gets the same. */
export interface TenantAccountLimits {
  /** Connections of the tenant's users at once (agents and monitoring users). */
  maxConnections: number;
  /** JetStream file storage of the account (the event stream); the stream's own cap is below it. */
  storageBytes: number;
}

/** The largest message a tenant's user may publish (JetStream API requests and acks are far smaller). */
export const TENANT_MAX_PAYLOAD = 64 * 1024;
/** Consumers a tenant's monitoring users may hold on the event stream at once. */
export const TENANT_MAX_CONSUMERS = 64;

export interface TenantAccount {
  tenantId: string;
  /** The account's public key (`A…`). */
  accountId: string;
  /** Signs the tenant's users. */
  signing: KeyPair;
  /** The account JWT, signed by the operator signing key. */
  jwt(): Promise<string>;
}

const HKDF_SALT = Buffer.from("route-list-controller nats tenant account v1");

function derivedPair(rootSeed: Uint8Array, info: string): KeyPair {
  const raw = new Uint8Array(hkdfSync("sha256", rootSeed, HKDF_SALT, Buffer.from(info), 32));
  return fromSeed(Codec.encodeSeed(Prefix.Account, raw));
}

/** The raw 32 bytes behind an operator signing key's seed (`SO…`). */
export function rawSeedOf(operatorSigning: KeyPair): Uint8Array {
  return Codec.decodeSeed(operatorSigning.getSeed()).buf;
}

/** The tenant's account: derived keys, imports of its own subjects, the limits. */
export function tenantAccount(operatorSigning: KeyPair, controllerAccountId: string, tenantId: string, limits: TenantAccountLimits): TenantAccount {
  subjectToken(tenantId);
  const root = rawSeedOf(operatorSigning);
  const account = derivedPair(root, `${tenantId}/account`);
  const signing = derivedPair(root, `${tenantId}/signing`);
  return {
    tenantId,
    accountId: account.getPublicKey(),
    signing,
    jwt: () =>
      encodeAccount(
        `rl-tenant-${tenantId}`,
        account,
        {
          signing_keys: [signing.getPublicKey()],
          imports: [
            { name: "events", subject: eventSubjects.tenant(tenantId), account: controllerAccountId, type: "stream" },
            { name: "wake-ups", subject: internalSubjects.notify(tenantId, "*"), account: controllerAccountId, type: "stream" },
          ],
          // A limits object leaves every limit it omits at 0: all are named.
          limits: {
            conn: limits.maxConnections,
            leaf: 0,
            subs: 10_000,
            data: -1,
            payload: TENANT_MAX_PAYLOAD,
            imports: -1,
            exports: 0,
            wildcards: true,
            mem_storage: 0,
            disk_storage: limits.storageBytes,
            disk_max_stream_bytes: limits.storageBytes,
            // Every stream must say how large it may grow: one without max_bytes is refused.
            max_bytes_required: true,
            streams: 1,
            consumer: TENANT_MAX_CONSUMERS,
          },
        },
        { signer: operatorSigning },
      ),
  };
}

/** An agent hears its own speaker's wake-ups and publishes nothing (it reports over gRPC or HTTP). */
export function agentPermissions(tenantId: string, speakerId: string): Partial<User> {
  return { sub: { allow: [internalSubjects.notify(tenantId, speakerId)] }, pub: { deny: [">"] } };
}

/**
 * A dashboard reads its tenant's events, live and from the tenant's stream (consumers of that
 * stream, fetch, acks, flow control), with replies on its tenant's inbox prefix. Whatever
 * deliver or reply subject it names stays in its own account: at worst copies of its own
 * tenant's events or JetStream answers in its own tenant's subjects, which the stream's size cap
 * bounds and which agents ignore (they act only on notifications the controller signed).
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

/** The controller's own user inside a tenant account: it keeps the tenant's event stream and nothing else. */
export function streamKeeperPermissions(tenantId: string): Partial<User> {
  const stream = eventStreamName(tenantId);
  return {
    sub: { allow: ["_INBOX.>"] },
    pub: { allow: ["$JS.API.INFO", `$JS.API.STREAM.INFO.${stream}`, `$JS.API.STREAM.CREATE.${stream}`, `$JS.API.STREAM.UPDATE.${stream}`] },
  };
}
