import { ConfigError, parseEnvironment } from "@rlc/shared";
import { z } from "zod";

const port = z.coerce.number().int().min(0).max(65535);
const millis = (fallback: number) => z.coerce.number().int().min(1).max(3_600_000).default(fallback);
const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === "" ? undefined : v.trim()));

/** Every environment variable the controller reads (listed in docs/configure.md); bad values fail at start with a message. */
const ConfigSchema = z.object({
  DATABASE_URL: optionalString,
  APP_DATA_DIR: z.string().default("./data"),
  NATS_URL: optionalString,
  NATS_CREDS_FILE: optionalString,
  NATS_ACCOUNT_SEED_FILE: optionalString,
  /** How long each tenant's JetStream stream keeps its events (`rl.v1.<tenant>.>`), in seconds. */
  NATS_EVENTS_MAX_AGE_SECONDS: z.coerce
    .number()
    .int()
    .min(60)
    .max(30 * 86_400)
    .default(3600),
  /** Each tenant's event stream keeps at most this many bytes (the oldest events go first). */
  NATS_EVENTS_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024 * 1024)
    .default(64 * 1024 * 1024),
  /** JetStream replicas of the event streams: 1 on one server, 3 on a three-node cluster. */
  NATS_EVENTS_REPLICAS: z.coerce.number().int().min(1).max(5).default(1),
  /** The operator signing key (`SO…`) that signs one NATS account per tenant (`controller nats init`). */
  NATS_OPERATOR_SEED_FILE: optionalString,
  /** A system-account user that pushes the tenant accounts to the NATS servers. */
  NATS_SYSTEM_CREDS_FILE: optionalString,
  /** Connections one tenant's NATS users may hold at once (agents and monitoring users). */
  NATS_TENANT_MAX_CONNECTIONS: z.coerce.number().int().min(1).default(10_000),
  /** JetStream file storage of one tenant's account; its event stream's cap must fit in it. */
  NATS_TENANT_STORAGE_BYTES: z.coerce
    .number()
    .int()
    .min(1024 * 1024)
    .default(256 * 1024 * 1024),
  HTTP_HOST: z.string().default("0.0.0.0"),
  HTTP_PORT: port.default(8080),
  // A client that announces a body and never sends it, or never finishes its headers, holds a
  // socket and its parser: these bound how long (see docs/security.md, "Limits").
  HTTP_HEADERS_TIMEOUT_MS: millis(10_000),
  HTTP_REQUEST_TIMEOUT_MS: millis(60_000),
  HTTP_IDLE_TIMEOUT_MS: millis(120_000),
  HTTP_KEEPALIVE_TIMEOUT_MS: millis(5_000),
  /** `/metrics` on a listener of its own (unset: on the HTTP listener, beside the API). */
  METRICS_PORT: optionalString.transform((v) => (v === undefined ? undefined : Number(v))).pipe(z.number().int().min(0).max(65535).optional()),
  /** Where that listener binds; loopback unless told, since `/metrics` takes no key. */
  METRICS_HOST: optionalString,
  GRPC_HOST: z.string().default("0.0.0.0"),
  GRPC_PORT: port.default(50051),
  GRPC_TLS_CERT: optionalString,
  GRPC_TLS_KEY: optionalString,
  /**
   * What agents pin of GRPC_TLS_CERT's chain: `ca` = its last certificate, which must be a CA of
   * the controller's own (self-signed, not a public root); `leaf` = the server certificate itself.
   */
  GRPC_TLS_PIN: z.enum(["ca", "leaf"], { error: "must be ca or leaf" }).default("ca"),
  GRPC_MAX_CONNECTIONS_PER_ADDRESS: z.coerce.number().int().min(1).max(1_000_000).default(64),
  /**
   * The agents' HTTPS listener: the node routes (enrollment, bundles, status) with gRPC's
   * certificate, so agents pin one CA for both; `off` = not served.
   */
  NODE_HTTPS_HOST: z.string().default("0.0.0.0"),
  NODE_HTTPS_PORT: z.union([z.literal("off"), port]).default(8443),
  /** Plaintext gRPC (a TLS-terminating proxy in front): enrollment tokens then carry no CA hash. */
  GRPC_INSECURE: optionalString.pipe(z.enum(["true", "false"], { error: "must be true or false" }).optional()).transform((v) => v === "true"),
  APP_SERVICE: z.enum(["app-all", "api", "worker", "scheduler"]).default("app-all"),
  APP_RUNTIME_LOGS_DIR: optionalString,
  APP_CORS_ORIGINS: optionalString,
  /** The web console at / and /console/ (static files built with the controller); `false` = not served. */
  APP_CONSOLE: optionalString.pipe(z.enum(["true", "false"], { error: "must be true or false" }).optional()).transform((v) => v !== "false"),
  /** Where the console's built files are; unset = the dist/ of the @rlc/console package. */
  APP_CONSOLE_DIR: optionalString,
  APP_OUTBOUND_ALLOW_CIDRS: optionalString,
  AUTH_PORTAL_URL: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional()),
  AUTH_AUDIT_INGEST_SECRET: optionalString,
  ASN_SOURCE: optionalString,
  ASN_SOURCE_URL: optionalString,
  /** The IRR server AS-SET entries are expanded through: `whois://host[:port]` (port 43), IRRd's query protocol. */
  IRR_SOURCE: optionalString.pipe(
    z
      .string()
      .regex(/^whois:\/\/[^/\s]+\/?$/, "must be whois://host[:port]")
      .optional(),
  ),
  /** The IRR sources (`!s`) a set without a pinned source is looked up in, comma-separated. */
  IRR_SOURCES: optionalString.pipe(
    z
      .string()
      .regex(/^[A-Za-z0-9_-]+(,[A-Za-z0-9_-]+)*$/, "must be source names separated by commas, such as RIPE,RADB")
      .optional()
      .transform((v) => (v === undefined ? undefined : v.toUpperCase().split(","))),
  ),
  /** An AS-SET with more member ASNs fails (and keeps its last good members). */
  IRR_MAX_MEMBERS: z.coerce.number().int().min(1).max(1_000_000).default(20_000),
  /** One AS-SET's expansion at most, in seconds. */
  IRR_TIME_LIMIT_SECONDS: z.coerce.number().int().min(1).max(3600).default(60),
  /** The VRPs modules with an `rpki_policy` are validated against: `file:<path>` or an http(s) URL of rpki-client's or Routinator's JSON. */
  RPKI_VRP_SOURCE: optionalString.pipe(
    z
      .string()
      .regex(/^(file:.+|https?:\/\/.+)$/, "must be file:<path> or an http(s):// URL")
      .optional(),
  ),
  /** The VRP document is read again when older than this; 0 reads it at every use. */
  RPKI_REFRESH_MINUTES: z.coerce.number().int().min(0).max(1440).default(10),
  /** A VRP document built longer ago than this makes validation unavailable (nothing is dropped). */
  RPKI_MAX_AGE_HOURS: z.coerce.number().int().min(1).max(8760).default(24),
  /** COUNTRY modules' source: `ripestat` (at ASN_SOURCE_URL) or `delegated:<path-or-URL>[,…]` (the RIRs' delegated statistics). */
  COUNTRY_SOURCE: optionalString.pipe(
    z
      .string()
      .regex(/^(ripestat|delegated:[^,]+(,[^,]+)*)$/, "must be ripestat or delegated:<path-or-URL>[,<path-or-URL>…]")
      .optional(),
  ),
  BUNDLE_SIGNING_KEY_FILE: optionalString,
  /**
   * The bundle formats served to agents, comma-separated; each agent gets the newest of them it
   * announced (`rl-bundle/1` when it announced nothing). `rl-bundle/1` alone acts as a controller
   * of the release before rl-bundle/2 did.
   */
  BUNDLE_FORMATS: optionalString.pipe(
    z
      .string()
      .regex(/^\s*rl-bundle\/[12]\s*(,\s*rl-bundle\/[12]\s*)*$/, "must be rl-bundle/2, rl-bundle/1 or both, comma-separated")
      .optional()
      .transform((v) => {
        const listed = v === undefined ? null : new Set(v.split(",").map((f) => f.trim()));
        // Newest first, whatever the order written.
        return (["rl-bundle/2", "rl-bundle/1"] as const).filter((f) => listed === null || listed.has(f));
      }),
  ),
  APP_SECRET_KEY_FILE: optionalString,
  BIRD_CONTROL_SOCKET: optionalString,
  BIRD_CONFIG_PATH: optionalString,
  BOOTSTRAP_API_KEY: optionalString.pipe(
    z
      .string()
      .regex(/^rlk_[A-Za-z0-9]{8}_[A-Za-z0-9_-]{43,}$/, "must look like rlk_<8 characters>_<at least 43 base64url characters>")
      .optional(),
  ),
  /** Running jobs of one tenant per lane (fairness between tenants). */
  JOBS_TENANT_MAX_RUNNING: z.coerce.number().int().min(1).max(1000).default(2),
  /** Queued jobs one tenant may have before API calls that add more answer 429 `too_many_jobs`. */
  JOBS_TENANT_MAX_QUEUED: z.coerce.number().int().min(1).max(100_000).default(100),
  /** Memory budget of the lookup's in-memory views of all tenants together (least recently used go first). */
  LOOKUP_CACHE_MAX_MB: z.coerce.number().int().min(1).max(1_000_000).default(1024),
  /**
   * `incremental`: a refresh of a few modules rebuilds only the address blocks they changed, from the
   * tenant's last build kept in memory (the same revision byte for byte); `full` rebuilds from every
   * module's snapshot each time, for comparison.
   */
  REFRESH_MODE: z.enum(["incremental", "full"], { error: "must be incremental or full" }).default("incremental"),
  /**
   * `changes`: a revision is stored as a change against its parent where that is smaller (a
   * bounded chain, revision-store.ts); `whole`: every revision stored whole, as before migration
   * 0025 (a rolling upgrade with older controllers still reading, or for comparison).
   */
  REVISION_STORAGE: z.enum(["changes", "whole"], { error: "must be changes or whole" }).default("changes"),
  /**
   * Milliseconds after its commit that a revision whose change filled its chain is rewritten
   * whole (on the pool, beside the event loop), so the refresh that fills it writes only the change.
   */
  REVISION_WHOLE_DELAY_MS: z.coerce.number().int().min(0).max(3_600_000).default(5000),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
});

export type Config = z.infer<typeof ConfigSchema>;

export { ConfigError };

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const config = parseEnvironment(ConfigSchema, env);
  const nats = natsConfigProblem(config);
  if (nats) throw new ConfigError(`invalid configuration:\n  ${nats}`);
  if (config.METRICS_HOST && config.METRICS_PORT === undefined) throw new ConfigError("invalid configuration:\n  METRICS_HOST needs METRICS_PORT");
  return config;
}

/** NATS credentials only make sense together: the account seed mints users of the account the controller's creds name. */
function natsConfigProblem(c: Config): string | null {
  if ((c.NATS_CREDS_FILE || c.NATS_ACCOUNT_SEED_FILE) && !c.NATS_URL) return "NATS_CREDS_FILE and NATS_ACCOUNT_SEED_FILE need NATS_URL";
  if (c.NATS_ACCOUNT_SEED_FILE && !c.NATS_CREDS_FILE) return "NATS_ACCOUNT_SEED_FILE needs NATS_CREDS_FILE (the controller's own user names the account)";
  if ((c.NATS_OPERATOR_SEED_FILE || c.NATS_SYSTEM_CREDS_FILE) && !(c.NATS_OPERATOR_SEED_FILE && c.NATS_SYSTEM_CREDS_FILE && c.NATS_CREDS_FILE && c.NATS_URL))
    return "NATS_OPERATOR_SEED_FILE and NATS_SYSTEM_CREDS_FILE go together, with NATS_CREDS_FILE and NATS_URL (all written by `controller nats init`)";
  if (c.NATS_EVENTS_MAX_BYTES > c.NATS_TENANT_STORAGE_BYTES)
    return "NATS_EVENTS_MAX_BYTES must not exceed NATS_TENANT_STORAGE_BYTES (the stream lives in the tenant's account)";
  return null;
}

export function corsOrigins(config: Config): string[] {
  return (config.APP_CORS_ORIGINS ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}
