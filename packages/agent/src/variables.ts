// Every variable the agent reads, with its default and meaning: `rl-agent --help` prints this
// list and the Debian package's /etc/rl-agent/agent.env is written from it, so neither can miss one.

export interface VariableDoc {
  name: string;
  /** As an operator would write it; "" when unset means "none". */
  default: string;
  meaning: string;
  /** Shown in agent.env as a live line instead of a comment. */
  example?: string;
}

export const VARIABLES: readonly VariableDoc[] = [
  {
    name: "RL_CONTROLLER_URL",
    default: "",
    meaning:
      "the controller's node routes over HTTPS, e.g. https://controller.example.net:8443 (its agents' listener; required by run and enroll); several replicas comma-separated, the next used when one is unreachable (enrollment uses the first)",
  },
  {
    name: "RL_GRPC_URL",
    default: "",
    meaning:
      "host:port of the controller's gRPC service, or of each replica comma-separated (the next used when one fails); unset = the one enrollment named, or HTTP only",
  },
  {
    name: "RL_GRPC_TLS_CA",
    default: "",
    meaning: "CA file (PEM) for gRPC over TLS; unset = the CA pinned at enrollment, else the system roots (plaintext gRPC only with RL_INSECURE)",
  },
  { name: "RL_ENROLLMENT_TOKEN", default: "", meaning: "one-time token (rlt_<secret>.<CA hash>), needed only until the agent is enrolled" },
  { name: "RL_CA_HASH", default: "", meaning: "sha256:<hex> of the controller CA's public key; unset = the hash the enrollment token carries" },
  { name: "RL_INSECURE", default: "false", meaning: "true allows an http:// controller, plaintext gRPC and a token without a CA hash (warned at every start)" },
  { name: "RL_STATE_DIR", default: "/var/lib/rl-agent", meaning: "the node key, pinned signing keys, the last bundle (0700, files 0600)" },
  { name: "BIRD_CONTROL_SOCKET", default: "/run/bird/bird.ctl", meaning: "BIRD's control socket" },
  {
    name: "BIRD_CONFIG_PATH",
    default: "/etc/bird/rl-routes.conf",
    meaning: "the file the agent owns (default /etc/bird/bird.conf when RL_BIRD_MODE=full)",
  },
  { name: "RL_BIRD_MODE", default: "include", meaning: "include: bird.conf includes the agent's file; full: the agent writes bird.conf" },
  { name: "RL_BIRD_BIN", default: "bird", meaning: "the BIRD binary used for `bird -p -c` (the check before a reload)" },
  { name: "RL_NATS_URL", default: "", meaning: "NATS for wake-ups (comma-separated list allowed); unset = the one enrollment named" },
  { name: "RL_NATS_CREDS", default: "", meaning: "NATS user credentials file; unset = the one enrollment stored in RL_STATE_DIR (nats.creds)" },
  { name: "RL_METRICS_LISTEN", default: "127.0.0.1:9469", meaning: "host:port of /metrics and /healthz; off disables" },
  { name: "RL_POLL_SECONDS", default: "30", meaning: "period of the fallback HTTP poll, in seconds" },
  {
    name: "RL_HEALTH_WAIT_SECONDS",
    default: "0",
    meaning: "the shortest probation window this router accepts, whatever the tenant's BIRD.confirm_after_seconds",
  },
  { name: "RL_LOG_LEVEL", default: "info", meaning: "debug, info, warn, error or silent; JSON lines on stderr" },
  {
    name: "RL_BUNDLE_FORMATS",
    default: "rl-bundle/2,rl-bundle/1",
    meaning: "rl-bundle/1: act as the agent of the release before (announce nothing, read rl-bundle/1 only), to try an upgrade path",
  },
];

/** The variables as `--help` lists them: name, default, meaning. */
export function formatVariables(): string {
  const width = Math.max(...VARIABLES.map((v) => v.name.length));
  return VARIABLES.map((v) => `  ${v.name.padEnd(width)}  ${v.meaning}${v.default ? ` [default: ${v.default}]` : ""}\n`).join("");
}

/** /etc/rl-agent/agent.env as shipped: every variable, commented out at its default. */
export function envFileTemplate(): string {
  const lines = [
    "# rl-agent configuration. Read by `rl-agent` (--config, default /etc/rl-agent/agent.env);",
    "# a variable set in the environment wins over this file. Lines are NAME=value; # starts a comment.",
    "# `rl-agent --help` lists the same variables.",
    "",
  ];
  for (const v of VARIABLES) {
    lines.push(`# ${v.meaning}`, `#${v.name}=${v.default}`, "");
  }
  return lines.join("\n");
}
