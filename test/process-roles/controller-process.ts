import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "../helpers/lab-daemons.mjs";

const root = fileURLToPath(new URL("../../", import.meta.url));
export const serverJs = join(root, "packages/controller/dist/server.js");

/** Fails with what to do when the built controller is missing or older than what the test needs. */
export function assertBuilt(needs: string[]): void {
  if (!existsSync(serverJs)) {
    throw new Error(`${serverJs} is missing: build the controller first (\`npm test\` builds it before vitest; or \`npm run build\`)`);
  }
  for (const file of needs) {
    const built = join(root, "packages/controller/dist", file);
    if (!existsSync(built)) throw new Error(`${built} is missing: the controller build is stale; run \`npm run build\``);
  }
}

export { freePort };

/** A key in the BOOTSTRAP_API_KEY format: `rlk_<8 characters>_<43 base64url characters>`. */
export function newBootstrapKey(): string {
  return `rlk_${randomBytes(4).toString("hex")}_${randomBytes(32).toString("base64url")}`;
}

/** One `node packages/controller/dist/server.js`, its output kept line by line. */
export class ControllerProcess {
  readonly child: ChildProcess;
  readonly lines: string[] = [];
  readonly exited: Promise<number | null>;
  private readonly waiters = new Set<() => void>();

  constructor(
    readonly name: string,
    readonly port: number,
    env: Record<string, string>,
  ) {
    // A clean environment: nothing of the test runner's leaks into the process.
    this.child = spawn(process.execPath, [serverJs], {
      cwd: root,
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        HTTP_HOST: "127.0.0.1",
        HTTP_PORT: String(port),
        GRPC_HOST: "127.0.0.1",
        GRPC_PORT: "0",
        NODE_HTTPS_HOST: "127.0.0.1",
        NODE_HTTPS_PORT: "0",
        LOG_LEVEL: "info",
        ...env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const take = (chunk: Buffer, rest: { s: string }) => {
      rest.s += chunk.toString("utf8");
      const parts = rest.s.split("\n");
      rest.s = parts.pop()!;
      this.lines.push(...parts);
      for (const wake of [...this.waiters]) wake();
    };
    const out = { s: "" };
    const err = { s: "" };
    this.child.stdout!.on("data", (c: Buffer) => take(c, out));
    this.child.stderr!.on("data", (c: Buffer) => take(c, err));
    this.exited = new Promise((resolve) => this.child.once("exit", (code) => resolve(code)));
    this.exited.then(() => {
      for (const wake of [...this.waiters]) wake();
    });
  }

  get base(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  has(text: string): boolean {
    return this.lines.some((l) => l.includes(text));
  }

  /** Waits until a line contains `text`; throws (with the output) on timeout or exit. */
  async waitFor(text: string, ms: number): Promise<void> {
    const end = Date.now() + ms;
    while (!this.has(text)) {
      if (!this.alive) throw new Error(`${this.name} exited before printing "${text}":\n${this.lines.slice(-30).join("\n")}`);
      const left = end - Date.now();
      if (left <= 0) throw new Error(`${this.name} did not print "${text}" within ${ms} ms:\n${this.lines.slice(-30).join("\n")}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, Math.min(left, 250));
        const self = this;
        function done() {
          clearTimeout(timer);
          self.waiters.delete(done);
          resolve();
        }
        this.waiters.add(done);
      });
    }
  }

  async ready(): Promise<void> {
    // 90 s: a first start on the embedded database runs PGlite's initdb (10-35 s here), and two
    // test files share the machine's two cores.
    await this.waitFor("route-list controller listening on", 90_000);
  }

  async call(key: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
    const res = await fetch(`${this.base}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : null };
  }

  /** SIGTERM (graceful close) unless told otherwise; waits for the exit, SIGKILL after 10 s. */
  async stop(signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
    if (!this.alive) return;
    this.child.kill(signal);
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 10_000);
    await this.exited;
    clearTimeout(timer);
  }
}

/** A controller process on a free port, added to `running` (the file's teardown stops them) once it serves. */
export async function startControllerProcess(running: ControllerProcess[], name: string, env: Record<string, string>): Promise<ControllerProcess> {
  const p = new ControllerProcess(name, await freePort(), env);
  running.push(p);
  await p.ready();
  return p;
}
