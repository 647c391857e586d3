import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { DesiredRevision } from "../../packages/agent/src/bundle/http-client.js";
import type { StoredKey } from "../../packages/agent/src/state.js";
import type { BirdControl, BirdReply } from "../../packages/shared/src/bird/birdc.js";
import type { ProcessRunner } from "../../packages/shared/src/bird/validate.js";
import { type BundleContent, buildBundlePayload, type SigningKeyPair, signBundle, signingKeyFromSeed } from "../../packages/shared/src/bundle/index.js";

// Stand-ins for the agent's unit tests: a BIRD that answers on the control socket's terms and
// "loads" the BGP and static protocols of the files on disk, and bundles signed for real.

export const TENANT_ID = "0192f3a4-0000-7000-8000-000000000001";
export const SPEAKER_ID = "0192f3a4-0000-7000-8000-0000000000aa";

/** test/e2e/fixtures/bird-payload.json: one GoBGP peer, three IPv4 and two IPv6 prefixes. */
export function fixtureContent(): BundleContent {
  return JSON.parse(readFileSync(join(import.meta.dirname, "../e2e/fixtures/bird-payload.json"), "utf8")) as BundleContent;
}

export const reply = (code: number, text = ""): BirdReply => ({ code, text, lines: text.split("\n").map((t) => ({ code, text: t })) });

export const SHOW_STATUS = [
  "BIRD 2.0.12",
  "Router ID is 127.0.0.1",
  "Hostname is vm",
  "Current server time is 2026-11-22 04:15:49.716",
  "Last reboot on 2026-11-22 04:15:30.682",
  "Last reconfiguration on 2026-11-22 04:15:30.682",
  "Daemon is up and running",
].join("\n");

export interface FakeBird extends BirdControl {
  commands: string[];
  /** What the next matching command answers or throws; checked before the defaults. */
  answer(command: string | RegExp, result: BirdReply | Error | (() => BirdReply | Error | Promise<BirdReply | Error>)): void;
}

/**
 * Answers like BIRD 2.0.12. `show protocols all` lists, as `up`/`Established`, every protocol
 * `configFile` defines, as if BIRD had loaded it.
 */
export function fakeBird(configFile: string | null): FakeBird {
  const commands: string[] = [];
  const scripted: { match: string | RegExp; result: Parameters<FakeBird["answer"]>[1] }[] = [];
  return {
    commands,
    answer(match, result) {
      scripted.push({ match, result });
    },
    close: () => undefined,
    async command(command) {
      commands.push(command);
      const i = scripted.findIndex((s) => (typeof s.match === "string" ? s.match === command : s.match.test(command)));
      if (i >= 0) {
        const [s] = scripted.splice(i, 1);
        const result = typeof s?.result === "function" ? await s.result() : s?.result;
        if (result instanceof Error) throw result;
        if (result) return result;
      }
      if (command.startsWith("configure timeout")) return reply(3, "Reconfigured");
      if (command === "configure confirm") return reply(18, "Reconfiguration confirmed");
      if (command === "configure undo") return reply(21, "Undo requested");
      if (command === "show status") return reply(13, SHOW_STATUS);
      if (command === "show protocols all") return reply(0, protocolsOf(configFile));
      throw new Error(`fake BIRD: unexpected command ${command}`);
    },
  };
}

function protocolsOf(configFile: string | null): string {
  let text = "";
  try {
    text = configFile ? readFileSync(configFile, "utf8") : "";
  } catch {
    // no file yet: no protocols
  }
  const lines = ["Name       Proto      Table      State  Since         Info"];
  for (const m of text.matchAll(/^protocol (bgp|static) (\S+) \{/gm)) {
    const bgp = m[1] === "bgp";
    lines.push(`${m[2]} ${bgp ? "BGP" : "Static"}        ---        up     2026-11-22 04:15:30  ${bgp ? "Established" : ""}`);
    if (bgp)
      lines.push(
        "  BGP state:          Established",
        "    Neighbor address: 127.0.0.2",
        "    Neighbor AS:      65001",
        "    Routes:         0 imported, 5 exported, 0 preferred",
      );
  }
  return lines.join("\n");
}

export const okRunner: ProcessRunner = async () => ({ code: 0, signal: null, stdout: "", stderr: "" });

export async function testKey(seed = 3): Promise<SigningKeyPair> {
  return signingKeyFromSeed(new Uint8Array(32).fill(seed));
}

export function storedKey(key: SigningKeyPair, status: "active" | "retired" = "active"): StoredKey {
  return { key_id: key.keyId, alg: "ed25519", public_key: Buffer.from(key.publicKey).toString("base64"), status };
}

export interface IssueOptions {
  sequence: number;
  key: SigningKeyPair;
  revisionId?: number;
  speakerId?: string;
  tenantId?: string;
  expiresAt?: Date;
  issuedAt?: Date;
  tamper?: boolean;
}

/** A signed bundle of `content` as the controller would issue it, and the notification naming it. */
export async function issueBundle(content: BundleContent, o: IssueOptions): Promise<{ bytes: Uint8Array; desired: DesiredRevision }> {
  const payload = buildBundlePayload(
    { ...content, revision_id: o.revisionId ?? content.revision_id, speaker_id: o.speakerId ?? SPEAKER_ID, tenant_id: o.tenantId ?? TENANT_ID },
    { sequence: o.sequence, issuedAt: o.issuedAt ?? new Date(), expiresAt: o.expiresAt },
  );
  const signed = await signBundle(payload, o.key.secretKey, o.key.keyId);
  if (o.tamper) {
    const raw = Buffer.from(signed.payload, "base64");
    raw.writeUInt8((raw.at(-10) ?? 0) ^ 1, raw.length - 10);
    signed.payload = raw.toString("base64");
  }
  return {
    bytes: Buffer.from(JSON.stringify(signed)),
    desired: { revision_id: payload.revision_id, digest: payload.digest, sequence: payload.sequence, issued_at: payload.issued_at },
  };
}
