import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { initNatsAuthority, type NatsInitResult } from "../../packages/controller/src/bus/nats-auth.js";

export interface SecuredNats {
  url: string;
  init: NatsInitResult;
  /** The controller's environment for this server: its own user and the tenant accounts' authority. */
  controllerEnv: Record<string, string>;
  stop(): Promise<void>;
}

/**
 * A nats-server of the test's own that trusts a fresh operator (what `controller nats init`
 * writes), on a port the server picks; its address is read from its log.
 */
export async function startSecuredNats(): Promise<SecuredNats> {
  const dir = await mkdtemp(join(tmpdir(), "rl-nats-"));
  const init = await initNatsAuthority(join(dir, "auth"), { listen: "127.0.0.1:-1", http: null });
  const child: ChildProcess = spawn("nats-server", ["-c", init.files.server_config], { stdio: ["ignore", "ignore", "pipe"] });
  const url = await new Promise<string>((resolve, reject) => {
    let log = "";
    const timer = setTimeout(() => reject(new Error(`nats-server did not start:\n${log}`)), 10_000);
    child.stderr!.on("data", (chunk: Buffer) => {
      log += chunk.toString();
      const m = /Listening for client connections on (\S+)/.exec(log);
      if (m) {
        clearTimeout(timer);
        resolve(`nats://${m[1]}`);
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`nats-server exited (${code}):\n${log}`));
    });
  });
  child.stderr!.resume();
  return {
    url,
    init,
    controllerEnv: {
      NATS_URL: url,
      NATS_CREDS_FILE: init.files.controller_creds,
      NATS_OPERATOR_SEED_FILE: init.files.operator_signing_seed,
      NATS_SYSTEM_CREDS_FILE: init.files.system_creds,
    },
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once("exit", r));
        child.kill("SIGTERM");
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
