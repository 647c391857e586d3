import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { initNatsAuthority, type NatsInitResult } from "../../packages/controller/src/bus/nats-auth.js";
import { freePort } from "./lab-daemons.mjs";

/**
 * Three nats-server processes on loopback, clustered (routes, JetStream), each trusting the
 * operator `controller nats init` made, with a resolver directory and a store of its own. Nodes
 * can be killed and started again on the same ports and directories.
 */
export interface NatsCluster {
  urls: string[];
  init: NatsInitResult;
  controllerEnv: Record<string, string>;
  kill(i: number): Promise<void>;
  start(i: number): Promise<void>;
  stop(): Promise<void>;
}

export async function startNatsCluster(): Promise<NatsCluster> {
  const dir = await mkdtemp(join(tmpdir(), "rl-nats-cluster-"));
  const init = await initNatsAuthority(join(dir, "auth"), { listen: "127.0.0.1:4222", http: null });
  const base = await readFile(init.files.server_config, "utf8");
  const ports = await Promise.all([0, 1, 2].map(async () => ({ client: await freePort(), cluster: await freePort() })));
  const confs: string[] = [];
  for (let i = 0; i < 3; i++) {
    const conf = base
      .replace(/^listen: .*$/m, `listen: 127.0.0.1:${ports[i]!.client}\nserver_name: n${i}`)
      .replace(/^jetstream \{.*\}$/m, `jetstream { store_dir: ${JSON.stringify(join(dir, `js${i}`))} }`)
      .replace(/dir: ".*\/jwt"/, `dir: ${JSON.stringify(join(dir, `jwt${i}`))}`);
    const routes = ports.filter((_, j) => j !== i).map((p) => `nats-route://127.0.0.1:${p.cluster}`);
    const path = join(dir, `n${i}.conf`);
    await writeFile(path, `${conf}\ncluster {\n  name: rl\n  listen: 127.0.0.1:${ports[i]!.cluster}\n  routes: [${routes.join(", ")}]\n}\n`);
    confs.push(path);
  }
  const children: (ChildProcess | null)[] = [null, null, null];
  const start = async (i: number) => {
    const child = spawn("nats-server", ["-c", confs[i]!], { stdio: ["ignore", "ignore", "pipe"] });
    children[i] = child;
    await new Promise<void>((resolve, reject) => {
      let log = "";
      const timer = setTimeout(() => reject(new Error(`nats-server n${i} did not start:\n${log}`)), 15_000);
      child.stderr!.on("data", (c: Buffer) => {
        log += c.toString();
        if (log.includes("Server is ready")) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`nats-server n${i} exited (${code}):\n${log}`));
      });
    });
    child.stderr!.resume();
  };
  const kill = async (i: number) => {
    const child = children[i];
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGKILL");
    await exited;
    children[i] = null;
  };
  await Promise.all([0, 1, 2].map(start));
  const urls = ports.map((p) => `nats://127.0.0.1:${p.client}`);
  return {
    urls,
    init,
    controllerEnv: {
      NATS_URL: urls.join(","),
      NATS_CREDS_FILE: init.files.controller_creds,
      NATS_OPERATOR_SEED_FILE: init.files.operator_signing_seed,
      NATS_SYSTEM_CREDS_FILE: init.files.system_creds,
      NATS_EVENTS_REPLICAS: "3",
    },
    kill,
    start,
    async stop() {
      for (let i = 0; i < 3; i++) await kill(i);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
