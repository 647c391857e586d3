import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";

const root = join(import.meta.dirname, "../..");

/**
 * `rl-agent run` from its sources, as an operator runs it: full BIRD mode, enrolled with a
 * one-time token, plain HTTP to the controller and TLS gRPC pinned by the token's CA hash.
 * `log()` answers what it has written to stderr so far. `env` adds or overrides variables.
 */
export function startAgentProcess(opts: { controllerUrl: string; enrollmentToken: string; dir: string; etc: string; env?: Record<string, string> }): {
  child: ChildProcess;
  log(): string;
} {
  let log = "";
  const child = spawn(process.execPath, ["--import", "tsx", join(root, "packages/agent/src/main.ts"), "run"], {
    cwd: root,
    env: {
      ...process.env,
      TSX_TSCONFIG_PATH: join(root, "test/e2e/tsconfig.agent-child.json"),
      RL_CONTROLLER_URL: opts.controllerUrl,
      RL_INSECURE: "true",
      RL_ENROLLMENT_TOKEN: opts.enrollmentToken,
      RL_STATE_DIR: join(opts.dir, "state"),
      BIRD_CONTROL_SOCKET: join(opts.dir, "bird.ctl"),
      BIRD_CONFIG_PATH: join(opts.etc, "bird.conf"),
      RL_BIRD_MODE: "full",
      RL_METRICS_LISTEN: "off",
      RL_LOG_LEVEL: "info",
      ...opts.env,
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    log += chunk.toString();
  });
  return { child, log: () => log };
}
