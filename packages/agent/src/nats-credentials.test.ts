import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { keyIdOf } from "@rlc/shared/bundle";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { EnrollResult } from "./bundle/http-client.js";
import { enroll } from "./enroll.js";
import { readNatsCredentials } from "./nats-credentials.js";
import { StateStore } from "./state.js";

const raw = Buffer.alloc(32, 7);
const answer: EnrollResult = {
  speaker_id: "s1",
  tenant_id: "t1",
  api_key: "rlk_node0000_secret",
  signing_keys: [{ key_id: keyIdOf(raw), alg: "ed25519", public_key: raw.toString("base64"), status: "active", created_at: null, statement: null }],
  grpc_endpoint: null,
  nats_url: "nats://nats.example:4222",
  nats_credentials: "-----BEGIN NATS USER JWT-----\neyJ0\n------END NATS USER JWT------\n",
};

let dir = "";
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "rl-nats-creds-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Enrolls against a real local HTTP server that answers `result`, as a controller would. */
async function enrollWith(result: EnrollResult, state: StateStore) {
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => res.writeHead(201, { "content-type": "application/json" }).end(JSON.stringify(result)));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  try {
    const { port } = server.address() as AddressInfo;
    return await enroll({ controllerUrl: `http://127.0.0.1:${port}`, insecure: true, state, token: "rlt_x", hostname: "r1", agentVersion: "1", now: () => 0 });
  } finally {
    await new Promise((r) => server.close(r));
  }
}

describe("the agent's NATS credentials", () => {
  it("enrollment stores them in the state directory (0600) and the agent reads them back", async () => {
    const state = new StateStore(join(dir, "state"));
    await state.init();
    await enrollWith(answer, state);
    const file = join(dir, "state", "nats.creds");
    expect((statSync(file).mode & 0o777).toString(8)).toBe("600");
    expect(await readNatsCredentials(state.dir, undefined)).toBe(answer.nats_credentials);
  });

  it("RL_NATS_CREDS takes precedence; none stored and none configured means none", async () => {
    const state = new StateStore(join(dir, "state"));
    await state.init();
    await enrollWith({ ...answer, nats_credentials: null }, state);
    expect(await readNatsCredentials(state.dir, undefined)).toBeNull();
    const own = join(dir, "own.creds");
    writeFileSync(own, "mine");
    expect(await readNatsCredentials(state.dir, own)).toBe("mine");
    await expect(readNatsCredentials(state.dir, join(dir, "missing.creds"))).rejects.toThrow(/ENOENT/);
  });
});
