import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spkiHash } from "@rlc/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ControllerError } from "../../packages/agent/src/bundle/http-client.js";
import { fetchPinnedCa, pinnedFetch } from "../../packages/agent/src/bundle/pinning.js";
import { enroll, ensureControllerCa } from "../../packages/agent/src/enroll.js";
import { StateStore } from "../../packages/agent/src/state.js";
import { loadGrpcTls, pinnedOfChain } from "../../packages/controller/src/grpc/tls.js";
import { startTestController, type TestController } from "../helpers/controller.js";

// GRPC_TLS_CERT set to an ordinary fullchain.pem (the server certificate, then the CA that
// issued it, which is an intermediate of a CA that issues to anyone): pinning the chain's last
// certificate would let every certificate of that intermediate pass for the controller. The
// chain here is made by openssl: a root, an intermediate, the controller's certificate, another
// certificate of the same intermediate (someone else's), and a renewal of the controller's with
// the same key.

let dir: string;
let t: TestController;
const pem = (name: string) => readFileSync(join(dir, `${name}.pem`), "utf8");
const servers: Server[] = [];
let seen: string[] = [];

function openssl(args: string[]) {
  execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
}

/** root → intermediate → controller, other (a stranger's), renewed (the controller's key again). */
function makeChain() {
  writeFileSync(
    join(dir, "ext.cnf"),
    [
      "[inter]",
      "basicConstraints=critical,CA:TRUE,pathlen:0",
      "keyUsage=critical,keyCertSign,cRLSign",
      "[leaf]",
      "basicConstraints=critical,CA:FALSE",
      "keyUsage=critical,digitalSignature",
      "extendedKeyUsage=serverAuth",
      "subjectAltName=DNS:controller.example.net,IP:127.0.0.1",
      "",
    ].join("\n"),
  );
  const key = (name: string) => openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", `${name}.key`]);
  key("root");
  openssl(["req", "-x509", "-new", "-key", "root.key", "-subj", "/CN=Public Root", "-days", "30", "-out", "root.pem"]);
  key("inter");
  openssl(["req", "-new", "-key", "inter.key", "-subj", "/CN=Public Intermediate", "-out", "inter.csr"]);
  openssl([
    "x509",
    "-req",
    "-in",
    "inter.csr",
    "-CA",
    "root.pem",
    "-CAkey",
    "root.key",
    "-set_serial",
    "2",
    "-days",
    "30",
    "-extfile",
    "ext.cnf",
    "-extensions",
    "inter",
    "-out",
    "inter.pem",
  ]);
  key("controller");
  key("other");
  const leaf = (name: string, keyName: string, serial: string) => {
    openssl(["req", "-new", "-key", `${keyName}.key`, "-subj", `/CN=${name}`, "-out", `${name}.csr`]);
    openssl([
      "x509",
      "-req",
      "-in",
      `${name}.csr`,
      "-CA",
      "inter.pem",
      "-CAkey",
      "inter.key",
      "-set_serial",
      serial,
      "-days",
      "30",
      "-extfile",
      "ext.cnf",
      "-extensions",
      "leaf",
      "-out",
      `${name}.pem`,
    ]);
  };
  leaf("controller", "controller", "10");
  leaf("other", "other", "11");
  leaf("renewed", "controller", "12");
  writeFileSync(join(dir, "fullchain.pem"), pem("controller") + pem("inter"));
}

/** An HTTPS server presenting `leaf` + the intermediate, answering what the controller would. */
async function listener(leaf: "controller" | "other" | "renewed"): Promise<{ url: string; port: number }> {
  const server = createServer(
    { cert: pem(leaf) + pem("inter"), key: readFileSync(join(dir, `${leaf === "renewed" ? "controller" : leaf}.key`)) },
    async (req, res) => {
      seen.push(`${leaf} ${req.method} ${req.url}`);
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const answer = await t.app.inject({
        method: req.method as "GET",
        url: req.url!,
        headers: req.headers as Record<string, string>,
        payload: Buffer.concat(chunks),
      });
      res.writeHead(answer.statusCode, { "content-type": String(answer.headers["content-type"] ?? "application/json") });
      res.end(answer.rawPayload);
    },
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push(server);
  const port = (server.address() as AddressInfo).port;
  return { url: `https://127.0.0.1:${port}`, port };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "rl-chain-"));
  makeChain();
  t = await startTestController({
    env: { GRPC_TLS_CERT: join(dir, "fullchain.pem"), GRPC_TLS_KEY: join(dir, "controller.key"), GRPC_TLS_PIN: "leaf" },
  });
}, 120_000);
afterAll(async () => {
  for (const s of servers) s.close();
  await t?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const files = () => ({ certFile: join(dir, "fullchain.pem"), keyFile: join(dir, "controller.key") });
const tls = (pin?: "ca" | "leaf") =>
  loadGrpcTls({
    sql: t.controller.db.sql,
    secretBox: t.controller.deps.services.secretBox,
    files: files(),
    names: [],
    now: new Date(),
    ...(pin ? { pin } : {}),
  });

describe("GRPC_TLS_CERT with a public CA's fullchain", () => {
  it("is refused at start by default (GRPC_TLS_PIN=ca): its last certificate is an intermediate, and the message names the switch", async () => {
    await expect(tls()).rejects.toThrow(/GRPC_TLS_CERT: the chain's last certificate \(CN=Public Intermediate\) is not self-signed.*GRPC_TLS_PIN=leaf/s);
    // A root that is public is refused as well (here the test's root stands for one of Node's).
    const rootChain = [pem("controller"), pem("inter"), pem("root")];
    expect(() => pinnedOfChain(rootChain, "ca", new Set([spkiHash(pem("root"))]))).toThrow(/is a public root CA/);
    // A CA of the controller's own (self-signed, not public) is pinned as before.
    expect(spkiHash(pinnedOfChain(rootChain, "ca", new Set()))).toBe(spkiHash(pem("root")));
  });

  it("with GRPC_TLS_PIN=leaf, tokens pin the controller's own certificate", async () => {
    const material = await tls("leaf");
    expect(material.caHash).toBe(spkiHash(pem("controller")));
    const speaker = (
      await t.call(t.rootKey, { method: "POST", url: "/v1/speakers", payload: { name: "edge-a", mode: "remote", router_id: "192.0.2.1", asn: 65010 } })
    ).json();
    expect(speaker.enrollment_token).toMatch(new RegExp(`\\.${spkiHash(pem("controller")).slice("sha256:".length)}$`));
  });

  it("another certificate issued by the same intermediate is no longer taken for the controller: not at enrollment, not afterwards", async () => {
    const pin = spkiHash(pem("controller"));
    const stranger = await listener("other");
    await expect(fetchPinnedCa("127.0.0.1", stranger.port, pin)).rejects.toMatchObject({ code: "untrusted_controller" });

    const speaker = (
      await t.call(t.rootKey, { method: "POST", url: "/v1/speakers", payload: { name: "edge-b", mode: "remote", router_id: "192.0.2.1", asn: 65010 } })
    ).json();
    const state = new StateStore(join(dir, "state-b"));
    await state.init();
    seen = [];
    const refused = await enroll({
      controllerUrl: stranger.url,
      insecure: false,
      state,
      token: speaker.enrollment_token,
      hostname: "r1",
      agentVersion: "1",
      now: Date.now,
    }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ControllerError);
    expect((refused as ControllerError).code).toBe("untrusted_controller");
    expect(seen).toEqual([]);

    // The real one is enrolled with, and trusted from then on; the stranger still is not.
    const real = await listener("controller");
    const node = await enroll({
      controllerUrl: real.url,
      insecure: false,
      state,
      token: speaker.enrollment_token,
      hostname: "r1",
      agentVersion: "1",
      now: Date.now,
    });
    expect(spkiHash(node.controller_ca_pem!)).toBe(pin);
    const trusted = pinnedFetch(node.controller_ca_pem!);
    expect((await trusted(`${real.url}/v1/health`)).status).toBe(200);
    await expect(trusted(`${stranger.url}/v1/health`)).rejects.toThrow();
  });

  it("an agent refuses a token that pins the intermediate (as controllers did before): it vouches for others too", async () => {
    const real = await listener("controller");
    await expect(fetchPinnedCa("127.0.0.1", real.port, spkiHash(pem("inter")))).rejects.toMatchObject({
      code: "untrusted_controller",
      message: expect.stringMatching(/an intermediate CA/),
    });
  });

  it("a renewal with the same key keeps the pin: the agent takes the new certificate at its next start", async () => {
    const renewed = await listener("renewed");
    const pin = spkiHash(pem("controller"));
    const state = new StateStore(join(dir, "state-renewed"));
    await state.init();
    const node = {
      speaker_id: "s",
      tenant_id: "t",
      api_key: "k",
      grpc_endpoint: null,
      nats_url: null,
      enrolled_at: new Date().toISOString(),
      ca_hash: pin,
      controller_ca_pem: pem("controller"),
    };
    // The certificate kept no longer matches what the controller presents…
    await expect(pinnedFetch(node.controller_ca_pem)(`${renewed.url}/v1/health`)).rejects.toThrow();
    // …until the start takes it again under the same pin.
    const updated = await ensureControllerCa(node, { controllerUrl: renewed.url }, state);
    expect(updated.controller_ca_pem?.replace(/\s+/g, "")).toBe(pem("renewed").replace(/\s+/g, ""));
    expect((await pinnedFetch(updated.controller_ca_pem!)(`${renewed.url}/v1/health`)).status).toBe(200);
  });
});
