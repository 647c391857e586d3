import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeFileAtomic } from "@rlc/shared/bird";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type NodeIdentity, StateError, StateStore } from "./state.js";

const node: NodeIdentity = {
  speaker_id: "s1",
  tenant_id: "t1",
  api_key: "rlk_node0000_secret",
  grpc_endpoint: "controller:50051",
  nats_url: null,
  enrolled_at: "2026-11-22T10:00:00.000Z",
};
const key = { key_id: "0011223344556677", alg: "ed25519" as const, public_key: "AAAA", status: "active" as const };

let dir = "";
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "rl-state-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("StateStore", () => {
  it("keeps node key, pinned keys, last bundle and applied record across a restart, each file 0600", async () => {
    const first = new StateStore(join(dir, "state"));
    await first.init();
    await first.writeNode(node);
    await first.writeSigningKeys([key]);
    await first.recordApplied(Buffer.from('{"format":"rl-bundle/1"}'), {
      revision_id: 3,
      sequence: 7,
      digest: "sha256:ab",
      applied_at: "2026-11-22T10:01:00.000Z",
    });

    const restarted = new StateStore(join(dir, "state"));
    expect(await restarted.readNode()).toEqual(node);
    expect(await restarted.readSigningKeys()).toEqual([key]);
    expect(Buffer.from((await restarted.readLastBundle()) ?? []).toString()).toBe('{"format":"rl-bundle/1"}');
    expect(await restarted.readApplied()).toEqual({ revision_id: 3, sequence: 7, digest: "sha256:ab", applied_at: "2026-11-22T10:01:00.000Z" });
    for (const f of readdirSync(join(dir, "state"))) expect(statSync(join(dir, "state", f)).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, "state")).mode & 0o777).toBe(0o700);
  });

  it("reads back what it wrote, and after a write that failed reads the disk again", async () => {
    const state = new StateStore(join(dir, "state"));
    await state.init();
    const first = { revision_id: 3, sequence: 7, digest: "sha256:ab", applied_at: "2026-11-22T10:01:00.000Z" };
    await state.recordApplied(Buffer.from("bundle 3"), first);
    await state.writeSigningKeys([key]);
    expect(await state.readApplied()).toEqual(first);
    expect(await state.readSigningKeys()).toEqual([key]);
    // applied.json cannot be replaced (a directory stands in its way): the record is not taken
    // as written, and what the disk holds is what is read.
    rmSync(join(dir, "state", "applied.json"));
    mkdirSync(join(dir, "state", "applied.json", "x"), { recursive: true });
    await expect(state.recordApplied(Buffer.from("bundle 4"), { ...first, revision_id: 4, sequence: 8 })).rejects.toThrow();
    await expect(state.readApplied()).rejects.toBeInstanceOf(StateError);
    rmSync(join(dir, "state", "applied.json"), { recursive: true });
    expect(await state.readApplied()).toBeNull();
    const retired = { ...key, status: "retired" as const };
    await state.writeSigningKeys([retired]);
    expect(await state.readSigningKeys()).toEqual([retired]);
    expect(await new StateStore(join(dir, "state")).readSigningKeys()).toEqual([retired]);
  });

  it("reads nothing before the first write", async () => {
    const state = new StateStore(join(dir, "fresh"));
    await state.init();
    expect([await state.readNode(), await state.readApplied(), await state.readLastBundle(), await state.readSigningKeys()]).toEqual([null, null, null, []]);
  });

  it("ignores the temporary file a crash left mid-write: the previous version is read whole", async () => {
    const state = new StateStore(dir);
    await state.writeNode(node);
    // What a crash between open and rename leaves: a partial temporary file beside the real one.
    writeFileSync(join(dir, ".node.json.0123456789ab.tmp"), '{"speaker_id": "s2", "tena');
    expect(await new StateStore(dir).readNode()).toEqual(node);
  });

  it("a reader never sees half a file while writes replace it", async () => {
    const path = join(dir, "big.json");
    const versions = ["a", "b"].map((c) => JSON.stringify({ fill: c.repeat(2_000_000) }));
    await writeFileAtomic(path, versions[0] as string, 0o600);
    let reads = 0;
    let writing = true;
    const writer = (async () => {
      for (let i = 0; i < 20; i++) await writeFileAtomic(path, versions[i % 2] as string, 0o600);
      writing = false;
    })();
    while (writing) {
      const text = readFileSync(path, "utf8");
      expect(versions).toContain(text);
      reads++;
      await new Promise((r) => setImmediate(r));
    }
    await writer;
    expect(reads).toBeGreaterThan(0);
    expect(readdirSync(dir)).toEqual(["big.json"]);
  });

  it("says which file is damaged instead of starting from nothing", async () => {
    const state = new StateStore(dir);
    writeFileSync(join(dir, "applied.json"), '{"revision_id": "x"}');
    await expect(state.readApplied()).rejects.toBeInstanceOf(StateError);
    await expect(state.readApplied()).rejects.toThrow(/applied\.json/);
  });

  it("refuses a state directory that its group or others may write into", async () => {
    for (const mode of [0o777, 0o770, 0o702]) {
      const state = join(dir, `open-${mode.toString(8)}`);
      mkdirSync(state);
      chmodSync(state, mode);
      const error = await new StateStore(state).init().catch((e: unknown) => e);
      expect(error, mode.toString(8)).toBeInstanceOf(StateError);
      expect((error as Error).message).toMatch(/RL_STATE_DIR: .* writable by its group or by others \(mode 0\d+\).*chmod 0700/);
    }
    const fine = join(dir, "fine");
    mkdirSync(fine);
    chmodSync(fine, 0o750);
    await new StateStore(fine).init();
  });

  it("writes the node key 0600 whatever the umask, and replaces a symlink planted at its name instead of following it", async () => {
    const victim = join(dir, "victim");
    writeFileSync(victim, "precious\n");
    const state = join(dir, "state");
    mkdirSync(state, { mode: 0o700 });
    symlinkSync(victim, join(state, "node.json"));
    const umask = process.umask(0o000);
    try {
      await new StateStore(state).writeNode(node);
    } finally {
      process.umask(umask);
    }
    expect(readFileSync(victim, "utf8")).toBe("precious\n");
    expect(statSync(join(state, "node.json")).mode & 0o777).toBe(0o600);
    expect(await new StateStore(state).readNode()).toEqual(node);
  });
});

describe("writeFileAtomic", () => {
  it("gives the file to a group with 0640 before any byte is written", async () => {
    const path = join(dir, "shared.conf");
    const gid = process.getgid?.() ?? 0;
    await writeFileAtomic(path, 'password "x";\n', { mode: 0o640, gid });
    expect(statSync(path).mode & 0o777).toBe(0o640);
    expect(statSync(path).gid).toBe(gid);
  });
});
