// Every variable the agent reads, with its default and meaning: `rl-agent --help` prints this
// list and the Debian package's /etc/rl-agent/agent.env is written from it, so neither can miss one.

export interface VariableDoc {
  name: string;
  /** As an operator would write it; "" when unset means "none". */
  default: string;
  meaning: string;
}

// NAME | default | meaning: one variable a line, as `rl-agent --help` lists them.
const TABLE = `
RL_CONTROLLER_URL      |                          | the controller's node routes over HTTPS, e.g. https://controller.example.net:8443 (its agents' listener; required by run and enroll); several replicas comma-separated, the next used when one is unreachable (enrollment uses the first)
RL_GRPC_URL            |                          | host:port of the controller's gRPC service, or of each replica comma-separated (the next used when one fails); unset = the one enrollment named, or HTTP only
RL_GRPC_TLS_CA         |                          | CA file (PEM) for gRPC over TLS; unset = the CA pinned at enrollment, else the system roots (plaintext gRPC only with RL_INSECURE)
RL_ENROLLMENT_TOKEN    |                          | one-time token (rlt_<secret>.<CA hash>), needed only until the agent is enrolled
RL_CA_HASH             |                          | sha256:<hex> of the controller CA's public key; unset = the hash the enrollment token carries
RL_INSECURE            | false                    | true allows an http:// controller, plaintext gRPC and a token without a CA hash (warned at every start)
RL_STATE_DIR           | /var/lib/rl-agent        | the node key, pinned signing keys, the last bundle (0700, files 0600)
BIRD_CONTROL_SOCKET    | /run/bird/bird.ctl       | BIRD's control socket
BIRD_CONFIG_PATH       | /etc/bird/rl-routes.conf | the file the agent owns (default /etc/bird/bird.conf when RL_BIRD_MODE=full)
RL_BIRD_MODE           | include                  | include: bird.conf includes the agent's file; full: the agent writes bird.conf
RL_BIRD_BIN            | bird                     | the BIRD binary used for \`bird -p -c\` (the check before a reload)
RL_NATS_URL            |                          | NATS for wake-ups (comma-separated list allowed); unset = the one enrollment named
RL_NATS_CREDS          |                          | NATS user credentials file; unset = the one enrollment stored in RL_STATE_DIR (nats.creds)
RL_METRICS_LISTEN      | 127.0.0.1:9469           | host:port of /metrics and /healthz; off disables
RL_POLL_SECONDS        | 30                       | period of the fallback HTTP poll, in seconds
RL_HEALTH_WAIT_SECONDS | 0                        | the shortest probation window this router accepts, whatever the tenant's BIRD.confirm_after_seconds
RL_LOG_LEVEL           | info                     | debug, info, warn, error or silent; JSON lines on stderr
RL_BUNDLE_FORMATS      | rl-bundle/2,rl-bundle/1  | rl-bundle/1: act as the agent of the release before (announce nothing, read rl-bundle/1 only), to try an upgrade path
`;

export const VARIABLES: readonly VariableDoc[] = TABLE.trim()
  .split("\n")
  .map((line) => {
    const [name = "", value = "", meaning = ""] = line.split("|").map((cell) => cell.trim());
    return { name, default: value, meaning };
  });

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
