import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BirdError } from "@rlc/shared/bird";
import { afterEach, describe, expect, it } from "vitest";
import { fakeBird, reply } from "../../../test/helpers/agent-fakes.js";
import { birdFixture, ESTABLISHED_A1 } from "./bird-fixtures.test-helper.js";
import { protocolsCommand, STATUS_EXIT, statusCommand, statusExitCode, statusWithExitCode } from "./commands.js";
import { StateStore } from "./state.js";

// Captured `birdc show protocols all` (packages/shared/src/bird/status/fixtures/README.md): a1 Established with GoBGP,
// a2 and a3 Active with "Connection refused".
const established = birdFixture("established.txt");
const now = new Date("2026-11-22T05:00:00Z");

function bird() {
  const b = fakeBird(null);
  b.answer("show protocols all", reply(0, established));
  return b;
}

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("rl-agent protocols", () => {
  it("lists BIRD's BGP sessions as a table", async () => {
    expect(await protocolsCommand({ bird: bird(), now, timeZone: "utc" }, { json: false })).toBe(
      [
        "PROTOCOL                                  PEER                                  NEIGHBOR   AS     STATE  BGP STATE    SINCE                     IMPORTED  EXPORTED  LAST ERROR",
        "rl_peer_0192f3a40000700080000000000000a1  0192f3a4-0000-7000-8000-0000000000a1  127.0.0.2  65001  up     Established  2026-11-22T04:15:35.000Z  0         4         -",
        "rl_peer_0192f3a40000700080000000000000a2  0192f3a4-0000-7000-8000-0000000000a2  127.0.0.3  65002  start  Active       2026-11-22T04:15:30.000Z  0         0         Socket: Connection refused",
        "rl_peer_0192f3a40000700080000000000000a3  0192f3a4-0000-7000-8000-0000000000a3  127.0.0.4  65003  start  Active       2026-11-22T04:15:30.000Z  0         0         Socket: Connection refused",
        "",
      ].join("\n"),
    );
  });

  it("--json gives the BgpSessionLive objects the agent reports", async () => {
    const out = JSON.parse(await protocolsCommand({ bird: bird(), now, timeZone: "utc" }, { json: true }));
    expect(out.sessions).toHaveLength(3);
    expect(out.sessions[0]).toEqual(ESTABLISHED_A1);
  });
});

describe("rl-agent status", () => {
  async function state() {
    const dir = mkdtempSync(join(tmpdir(), "rl-status-"));
    dirs.push(dir);
    const s = new StateStore(dir);
    await s.writeNode({
      speaker_id: "0192f3a4-0000-7000-8000-0000000000aa",
      tenant_id: "0192f3a4-0000-7000-8000-000000000001",
      api_key: "rlk_node0000_never-printed",
      grpc_endpoint: null,
      nats_url: null,
      enrolled_at: "2026-11-22T04:00:00.000Z",
    });
    await s.writeSigningKeys([{ key_id: "b62e867fa2f33afe", alg: "ed25519", public_key: "AAAA", status: "active" }]);
    await s.recordApplied(Buffer.from("{}"), { revision_id: 4, sequence: 9, digest: "sha256:abcd", applied_at: "2026-11-22T04:15:30.000Z" });
    return s;
  }

  it("says what the agent applied and what BIRD runs, never the node key", async () => {
    const text = await statusCommand({ bird: bird(), now, timeZone: "utc", state: await state() }, { json: false });
    expect(text).toBe(
      [
        "speaker       0192f3a4-0000-7000-8000-0000000000aa (tenant 0192f3a4-0000-7000-8000-000000000001, enrolled 2026-11-22T04:00:00.000Z)",
        "applied       revision 4, sequence 9, at 2026-11-22T04:15:30.000Z",
        "digest        sha256:abcd",
        "signing keys  b62e867fa2f33afe (active)",
        "bird          up, BIRD 2.0.12, router id 127.0.0.1, last reconfiguration 2026-11-22T04:15:30.682Z",
        "sessions      3 BGP, 1 established",
        "",
      ].join("\n"),
    );
    expect(text).not.toContain("rlk_");
  });

  it("--json, with BIRD not answering", async () => {
    const b = fakeBird(null);
    b.answer("show status", new BirdError("bird_unavailable", "control socket /run/bird/bird.ctl: connect ENOENT"));
    const out = JSON.parse(await statusCommand({ bird: b, now, timeZone: "utc", state: await state() }, { json: true }));
    expect(out).toMatchObject({
      enrolled: true,
      applied: { revision_id: 4, sequence: 9 },
      bird: { reachable: false, error: "control socket /run/bird/bird.ctl: connect ENOENT" },
      sessions: { total: 0, established: 0 },
    });
    expect(JSON.stringify(out)).not.toContain("rlk_");
  });
  it("exit code: 2 when not enrolled or BIRD does not answer, 1 when degraded, 0 in sync", async () => {
    const down = fakeBird(null);
    down.answer("show status", new BirdError("bird_unavailable", "control socket: connect ENOENT"));
    expect((await statusWithExitCode({ bird: down, now, timeZone: "utc", state: await state() }, { json: true })).code).toBe(2);
    const fresh = mkdtempSync(join(tmpdir(), "rl-status-"));
    dirs.push(fresh);
    expect((await statusWithExitCode({ bird: bird(), now, timeZone: "utc", state: new StateStore(fresh) }, { json: false })).code).toBe(2);
    // The fixture has 3 BGP sessions, one established: degraded.
    expect((await statusWithExitCode({ bird: bird(), now, timeZone: "utc", state: await state() }, { json: false })).code).toBe(1);

    const base = { enrolled: true, applied: { revision_id: 4 }, bird: { reachable: true }, sessions: { total: 2, established: 2 } };
    expect(statusExitCode(base)).toBe(STATUS_EXIT.inSync);
    expect(statusExitCode({ ...base, applied: null })).toBe(STATUS_EXIT.degraded);
    expect(statusExitCode({ ...base, sessions: { total: 2, established: 1 } })).toBe(STATUS_EXIT.degraded);
    expect(statusExitCode({ ...base, bird: { reachable: false } })).toBe(STATUS_EXIT.down);
    expect(statusExitCode({ ...base, enrolled: false })).toBe(STATUS_EXIT.down);
  });
});
