import { isAbsolute, resolve } from "node:path";
import { ConfigError, parseEnvironment } from "@rlc/shared";
import { type AgentAnnouncement, CURRENT_ANNOUNCEMENT } from "@rlc/shared/bundle";
import { z } from "zod";

const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === "" ? undefined : v.trim()));

/** `host:port`, `[v6]:port`; what grpc-js takes as a target and what a listener binds. */
const HOST_PORT = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/;
// Only the range: the form is the regex's to report.
const validPort = (v: string) => !(Number(v.slice(v.lastIndexOf(":") + 1)) > 65535);

/** A comma-separated list: items trimmed, empty ones and repeats dropped. */
const listItems = (value: string) => [...new Set(value.split(",").map((v) => v.trim()))].filter(Boolean);
const isHttpUrl = (v: string) => URL.canParse(v) && /^https?:$/.test(new URL(v).protocol) && new URL(v).hostname !== "";

/** One endpoint or several (a controller's replicas), tried in turn: the agent moves on when one fails. */
const hostPorts = (example: string) =>
  optionalString
    .pipe(
      z
        .string()
        .refine((v) => listItems(v).every((i) => HOST_PORT.test(i)), `must be host:port or a comma-separated list of them, e.g. ${example}`)
        .refine((v) => listItems(v).every(validPort), "port must be 0..65535")
        .transform(listItems)
        .optional(),
    )
    .transform((v) => v ?? []);
const httpUrls = optionalString
  .pipe(
    z
      .string()
      .refine((v) => listItems(v).every(isHttpUrl), "must be an http:// or https:// URL, or a comma-separated list of them")
      .transform((v) => [...new Set(listItems(v).map((u) => u.replace(/\/+$/, "")))])
      .optional(),
  )
  .transform((v) => v ?? []);

const seconds = (min: number, max: number, fallback: number) =>
  optionalString
    .transform((v) => (v === undefined ? fallback : Number(v)))
    .pipe(
      z
        .number({ error: (issue) => (issue.code === "invalid_type" ? "must be a number of seconds" : undefined) })
        .int("must be a whole number of seconds")
        .min(min, `must be at least ${min}`)
        .max(max, `must be at most ${max}`),
    );

const path = (fallback: string) => optionalString.transform((v) => resolve(v ?? fallback));

/** Every environment variable the agent reads (see the agent README). */
const Schema = z.object({
  RL_CONTROLLER_URL: httpUrls,
  RL_GRPC_URL: hostPorts("controller-a.example.net:50051,controller-b.example.net:50051"),
  RL_GRPC_TLS_CA: optionalString,
  RL_CA_HASH: optionalString.pipe(
    z
      .string()
      .regex(/^sha256:[0-9a-fA-F]{64}$/, "must be sha256:<64 hex digits> (the controller's CA public-key hash)")
      .optional(),
  ),
  RL_INSECURE: optionalString.pipe(z.enum(["true", "false"], { error: "must be true or false" }).optional()).transform((v) => v === "true"),
  RL_ENROLLMENT_TOKEN: optionalString,
  RL_STATE_DIR: path("/var/lib/rl-agent"),
  BIRD_CONTROL_SOCKET: path("/run/bird/bird.ctl"),
  BIRD_CONFIG_PATH: optionalString,
  RL_BIRD_MODE: optionalString.pipe(z.enum(["include", "full"], { error: "must be include or full" }).optional()).transform((v) => v ?? "include"),
  RL_BIRD_BIN: optionalString.transform((v) => v ?? "bird"),
  RL_NATS_URL: optionalString.pipe(
    z
      .string()
      .regex(/^(?:(?:nats|tls|wss?):\/\/)?[^\s,]+(?:,(?:(?:nats|tls|wss?):\/\/)?[^\s,]+)*$/, "must be a NATS URL or a comma-separated list of them")
      .optional(),
  ),
  RL_NATS_CREDS: optionalString.transform((v) => (v === undefined ? undefined : resolve(v))),
  RL_METRICS_LISTEN: optionalString
    .transform((v) => v ?? "127.0.0.1:9469")
    .pipe(
      z.union([z.literal("off"), z.string().regex(HOST_PORT, "must be host:port (e.g. 127.0.0.1:9469) or off").refine(validPort, "port must be 0..65535")]),
    ),
  RL_POLL_SECONDS: seconds(1, 86_400, 30),
  RL_HEALTH_WAIT_SECONDS: seconds(0, 300, 0),
  RL_BUNDLE_FORMATS: optionalString
    .transform((v) => v?.replaceAll(" ", ""))
    .pipe(z.enum(["rl-bundle/2,rl-bundle/1", "rl-bundle/1"], { error: "must be rl-bundle/2,rl-bundle/1 (the default) or rl-bundle/1" }).optional()),
  RL_LOG_LEVEL: optionalString.pipe(z.enum(["debug", "info", "warn", "error", "silent"]).optional()).transform((v) => v ?? "info"),
});

export interface AgentConfig {
  /**
   * HTTP bases of the controller, e.g. `https://controller.example.net:8443`: one, or one per
   * replica (the agent moves to the next when one is unreachable); empty when unset.
   */
  controllerUrls: string[];
  /** `host:port` of the controller's gRPC service, or of each replica's; empty = the one enrollment named, or none. */
  grpcUrls: string[];
  /** CA file to trust for gRPC over TLS instead of the pinned controller CA. */
  grpcTlsCa: string | undefined;
  /** `sha256:<hex>` of the controller CA's public key; otherwise the one the token carries. */
  caHash: string | undefined;
  /** Allows `http://` and plaintext gRPC, and enrollment without a CA hash (warned on every start). */
  insecure: boolean;
  enrollmentToken: string | undefined;
  stateDir: string;
  birdSocket: string;
  /** The file the agent owns: the include (include mode) or bird.conf itself (full mode). */
  birdConfigPath: string;
  birdMode: "include" | "full";
  birdBin: string;
  natsUrl: string | undefined;
  /** A `.creds` file for NATS; otherwise the one enrollment stored in the state directory, or none. */
  natsCreds: string | undefined;
  /** `host:port`, or null when the listener is off. */
  metricsListen: string | null;
  pollSeconds: number;
  /** How long sessions are watched after `configure timeout` before confirming; 0 = one check. */
  healthWaitSeconds: number;
  logLevel: "debug" | "info" | "warn" | "error" | "silent";
  /**
   * What the agent announces it accepts; null with `RL_BUNDLE_FORMATS=rl-bundle/1`: the agent of
   * the release before, which announces nothing and reads rl-bundle/1 only.
   */
  announcement: AgentAnnouncement | null;
}

export { ConfigError };

/** Reads the environment; throws a {@link ConfigError} listing every bad variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): AgentConfig {
  const e = parseEnvironment(Schema, env);
  const mode = e.RL_BIRD_MODE;
  const configPath = e.BIRD_CONFIG_PATH ?? (mode === "full" ? "/etc/bird/bird.conf" : "/etc/bird/rl-routes.conf");
  if (e.RL_CONTROLLER_URL.some((u) => u.startsWith("http://")) && !e.RL_INSECURE) {
    throw new ConfigError("invalid configuration:\n  RL_CONTROLLER_URL: must be https:// (http:// only with RL_INSECURE=true)");
  }
  if (!isAbsolute(configPath)) throw new ConfigError(`invalid configuration:\n  BIRD_CONFIG_PATH: must be an absolute path, got ${configPath}`);
  return {
    controllerUrls: e.RL_CONTROLLER_URL,
    grpcUrls: e.RL_GRPC_URL,
    grpcTlsCa: e.RL_GRPC_TLS_CA ? resolve(e.RL_GRPC_TLS_CA) : undefined,
    caHash: e.RL_CA_HASH?.toLowerCase(),
    insecure: e.RL_INSECURE,
    enrollmentToken: e.RL_ENROLLMENT_TOKEN,
    stateDir: e.RL_STATE_DIR,
    birdSocket: e.BIRD_CONTROL_SOCKET,
    birdConfigPath: configPath,
    birdMode: mode,
    birdBin: e.RL_BIRD_BIN,
    natsUrl: e.RL_NATS_URL,
    natsCreds: e.RL_NATS_CREDS,
    metricsListen: e.RL_METRICS_LISTEN === "off" ? null : e.RL_METRICS_LISTEN,
    pollSeconds: e.RL_POLL_SECONDS,
    healthWaitSeconds: e.RL_HEALTH_WAIT_SECONDS,
    logLevel: e.RL_LOG_LEVEL,
    announcement: e.RL_BUNDLE_FORMATS === "rl-bundle/1" ? null : CURRENT_ANNOUNCEMENT,
  };
}

/** `run` and `enroll` talk to the controller; `status` and `protocols` do not need it. Answers one URL or more. */
export function requireControllerUrls(config: AgentConfig): [string, ...string[]] {
  const [first, ...rest] = config.controllerUrls;
  if (!first) throw new ConfigError("invalid configuration:\n  RL_CONTROLLER_URL: required (the controller's HTTP base URL)");
  return [first, ...rest];
}

/** Splits `host:port` / `[v6]:port` for a listener. */
export function splitHostPort(value: string): { host: string; port: number } {
  const i = value.lastIndexOf(":");
  return { host: value.slice(0, i).replace(/^\[|\]$/g, ""), port: Number(value.slice(i + 1)) };
}

/** Every variable name the agent reads: a config file naming another one is a typo. */
export const CONFIG_VARIABLES: readonly string[] = Object.keys(Schema.shape);
