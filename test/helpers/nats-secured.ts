import { type ChildProcess, spawn } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { initNatsAuthority, type NatsInitResult } from "../../packages/controller/src/bus/nats-auth.js";

export interface SecuredNats {
  url: string;
  init: NatsInitResult;
  /** The controller's environment for this server: its own user and the tenant accounts' authority. */
  controllerEnv: Record<string, string>;
  /**
   * Stops the server and starts it again on the same address; `wipe` first empties its JetStream
   * store and its resolver's directory: a new server that knows only the configuration.
   */
  restart(options: { wipe: boolean }): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A nats-server of the test's own that trusts a fresh operator (what `controller nats init`
 * writes), on a port the server picks; its address is read from its log.
 */
export async function startSecuredNats(): Promise<SecuredNats> {
  const dir = await mkdtemp(join(tmpdir(), "rl-nats-"));
  const init = await initNatsAuthority(join(dir, "auth"), { listen: "127.0.0.1:-1", http: null });
  let config = init.files.server_config;
  let child: ChildProcess | null = null;
  const start = () => {
    const c = spawn("nats-server", ["-c", config], { stdio: ["ignore", "ignore", "pipe"] });
    child = c;
    return new Promise<string>((resolve, reject) => {
      let log = "";
      const timer = setTimeout(() => reject(new Error(`nats-server did not start:\n${log}`)), 10_000);
      c.stderr!.on("data", (chunk: Buffer) => {
        log += chunk.toString();
        const m = /Listening for client connections on (\S+)/.exec(log);
        if (m && log.includes("Server is ready")) {
          clearTimeout(timer);
          c.stderr!.removeAllListeners("data");
          c.stderr!.resume();
          resolve(`nats://${m[1]}`);
        }
      });
      c.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`nats-server exited (${code}):\n${log}`));
      });
    });
  };
  const kill = async () => {
    const c = child;
    if (c && c.exitCode === null && c.signalCode === null) {
      const exited = new Promise((r) => c.once("exit", r));
      c.kill("SIGTERM");
      await exited;
    }
    child = null;
  };
  const url = await start();
  return {
    url,
    init,
    controllerEnv: {
      NATS_URL: url,
      NATS_CREDS_FILE: init.files.controller_creds,
      NATS_OPERATOR_SEED_FILE: init.files.operator_signing_seed,
      NATS_SYSTEM_CREDS_FILE: init.files.system_creds,
    },
    async restart({ wipe }) {
      await kill();
      const text = await readFile(init.files.server_config, "utf8");
      if (wipe) {
        const store = /^jetstream \{ store_dir: (".*") \}$/m.exec(text);
        const resolver = /^\s*dir: (".*")$/m.exec(text);
        for (const m of [store, resolver]) if (m) await rm(JSON.parse(m[1]!) as string, { recursive: true, force: true });
        if (resolver) await mkdir(JSON.parse(resolver[1]!) as string, { recursive: true });
      }
      // The same address again: the port the first start was given.
      config = join(dir, "restarted.conf");
      await writeFile(config, text.replace(/^listen: .*$/m, `listen: ${new URL(url).host}`));
      await start();
    },
    async stop() {
      await kill();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
