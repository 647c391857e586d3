import { constants } from "node:fs";
import { mkdir, open, readFile, unlink } from "node:fs/promises";
import { join } from "node:path";
import { assertPrivateDirectory, syncDirectory, writeFileAtomic } from "@rlc/shared/bird";
import { sha256Hex } from "@rlc/shared/bundle";
import { z } from "zod";
import { encodeLogRecord, rebuildPrefixes } from "./prefix-log.js";

/** Who this agent is, from enrollment. The node key is a secret: the files are 0600. */
export interface NodeIdentity {
  speaker_id: string;
  tenant_id: string;
  api_key: string;
  /** What enrollment named; RL_GRPC_URL and RL_NATS_URL take precedence. */
  grpc_endpoint: string | null;
  nats_url: string | null;
  enrolled_at: string;
  /** `sha256:<hex>` of the controller CA the enrollment token named; null when enrolled without one. */
  ca_hash?: string | null | undefined;
  /** That CA's certificate, once taken from the controller's chain: the only CA the agent trusts for it. */
  controller_ca_pem?: string | null | undefined;
}

/** The bundle BIRD runs, as confirmed. */
export interface AppliedRecord {
  revision_id: number;
  sequence: number;
  digest: string;
  applied_at: string;
  /**
   * Hex SHA-256 of the bundle's full prefix section (rl-bundle/2), written by recordApplied: which
   * section the prefix files must give. Absent when written by an agent before the prefix log.
   */
  prefixes_sha256?: string | undefined;
}

/** A delta as signed: its bytes, and the SHA-256 of the sections it goes from and to. */
export interface PrefixDelta {
  bytes: Uint8Array;
  baseSha256: string;
  sha256: string;
}

/** The prefixes of an apply: the full section, and the delta that gave it when one did. */
export interface AppliedPrefixes {
  section: Uint8Array;
  delta?: PrefixDelta | null | undefined;
}

/**
 * The issue of a revision last refused for what it is (its signature, or a config BIRD refused
 * or reverted): not fetched again until the controller names another, across restarts too.
 */
export interface RefusedIssue {
  revision_id: number;
  digest: string;
  sequence: number | null;
  issued_at: string | null;
  /** Clock time of the refusal, in ms. */
  at: number;
  /** A reverted probation: never tried again (it took sessions down); others expire. */
  for_good: boolean;
}

/** A pinned signing key; verifyBundle takes these as they are. */
export interface StoredKey {
  key_id: string;
  alg: "ed25519";
  public_key: string;
  status: "active" | "retired";
}

const NodeSchema = z.object({
  speaker_id: z.string().min(1),
  tenant_id: z.string().min(1),
  api_key: z.string().min(1),
  grpc_endpoint: z.string().nullable(),
  nats_url: z.string().nullable(),
  enrolled_at: z.string(),
  ca_hash: z.string().nullish(),
  controller_ca_pem: z.string().nullish(),
});
const KeysSchema = z.object({
  keys: z.array(z.object({ key_id: z.string(), alg: z.literal("ed25519"), public_key: z.string(), status: z.enum(["active", "retired"]) })),
});
const AppliedSchema = z.object({
  revision_id: z.number().int().positive(),
  sequence: z.number().int().nonnegative(),
  digest: z.string(),
  applied_at: z.string(),
  prefixes_sha256: z.string().optional(),
});

const RefusedSchema = z.object({
  revision_id: z.number().int().positive(),
  digest: z.string(),
  sequence: z.number().int().nonnegative().nullable(),
  issued_at: z.string().nullable(),
  at: z.number(),
  for_good: z.boolean(),
});

const freezeKeys = (keys: StoredKey[]): readonly Readonly<StoredKey>[] => Object.freeze(keys.map((k) => Object.freeze(k)));

export class StateError extends Error {
  override name = "StateError";
}

const FILES = {
  node: "node.json",
  keys: "signing-keys.json",
  bundle: "last-bundle.json",
  prefixesBase: "last-prefixes-base.txt",
  prefixesLog: "last-prefixes.log",
  /** What an agent before the prefix log kept: its whole section, rewritten on every apply. */
  prefixesBefore: "last-prefixes.txt",
  applied: "applied.json",
  refused: "refused.json",
} as const;
const PRIVATE = 0o600;

/**
 * When the log is folded into a new base (the next apply writes its whole section instead of a
 * record): when the log would pass a quarter of the base's size, or hold this many records. The
 * size bound keeps what applies write in proportion to what changed (a base is written after at
 * least a quarter of its size in records) and what a restart reads under 1.25 bases. The count
 * bounds a restart's work, which is a copy of the whole section for each record however few lines
 * it changes (about 25 ms of CPU at 1.2M prefixes): a delta of one line costs a sixteenth of a
 * base, and a restart at most 16 copies.
 */
const COMPACT_FRACTION = 4;
const COMPACT_RECORDS = 16;

/** Where the prefix files stand after the last apply or read: what the next record continues. */
interface PrefixesTail {
  /** SHA-256 of the section applied.json names: the base a delta must apply to, to be logged. */
  sha256: string;
  /** Bytes of the log's records up to the one that gives it: the log is cut there first. */
  end: number;
  records: number;
  baseSize: number;
}

/**
 * RL_STATE_DIR: node identity, pinned signing keys, the last good bundle (its exact bytes, so
 * it can be verified again) and its prefixes, what was last applied and the issue last refused.
 * Each file is replaced atomically (writeFileAtomic), so a crash at any point leaves the previous
 * version whole; but for the prefix log, which is appended to, and whose records check themselves.
 */
export class StateStore {
  readonly dir: string;
  /**
   * applied.json and signing-keys.json as last read or written through this store, frozen
   * (undefined = read the file). The agent reads both on every sync and every report, and this
   * store is their only writer; a write that fails forgets the value, so the next read is the disk's.
   */
  #applied: Readonly<AppliedRecord> | null | undefined = undefined;
  #keys: readonly Readonly<StoredKey>[] | undefined = undefined;
  /** Counts writes begun: a read that started before one does not keep what it read. */
  #writes = 0;
  /** Where the prefix files stand; null when unknown (then the next apply writes a new base). */
  #tail: PrefixesTail | null = null;

  constructor(dir: string) {
    this.dir = dir;
  }

  /**
   * Creates the directory (0700) when missing, and refuses one that is group- or
   * other-writable or owned by another user: it holds the node key and the pinned signing
   * keys, which whoever can write there could replace.
   */
  async init(): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    try {
      await assertPrivateDirectory(this.dir);
    } catch (error) {
      throw new StateError(`RL_STATE_DIR: ${(error as Error).message}`, { cause: error });
    }
  }

  readNode(): Promise<NodeIdentity | null> {
    return this.#readJson(FILES.node, NodeSchema);
  }

  writeNode(node: NodeIdentity): Promise<void> {
    return this.#writeJson(FILES.node, NodeSchema.parse(node));
  }

  async readSigningKeys(): Promise<StoredKey[]> {
    if (this.#keys) return this.#keys as StoredKey[];
    const writes = this.#writes;
    const keys = freezeKeys((await this.#readJson(FILES.keys, KeysSchema))?.keys ?? []);
    if (writes === this.#writes) this.#keys = keys;
    return keys as StoredKey[];
  }

  async writeSigningKeys(keys: readonly StoredKey[]): Promise<void> {
    const parsed = KeysSchema.parse({ keys });
    const writes = ++this.#writes;
    this.#keys = undefined;
    await this.#writeJson(FILES.keys, parsed);
    if (writes === this.#writes) this.#keys = freezeKeys(parsed.keys);
  }

  async readApplied(): Promise<AppliedRecord | null> {
    if (this.#applied !== undefined) return this.#applied;
    const writes = this.#writes;
    const applied = await this.#readJson(FILES.applied, AppliedSchema);
    const frozen = applied && Object.freeze(applied);
    if (writes === this.#writes) this.#applied = frozen;
    return frozen;
  }

  /** The signed bundle BIRD runs, byte for byte as received. */
  async readLastBundle(): Promise<Uint8Array | null> {
    return this.#read(FILES.bundle);
  }

  /**
   * The full prefix section of the bundle BIRD runs (rl-bundle/2): what a delta bundle applies
   * to. Null before the first rl-bundle/2 was applied, or when the files do not give the section
   * applied.json names (then the agent fetches the full bundle). Rebuilt from the base and the log
   * of deltas since (prefix-log.ts); an applied.json of an agent before the log names no SHA-256,
   * and its last-prefixes.txt is read as it wrote it.
   */
  async readLastPrefixes(): Promise<Uint8Array | null> {
    const writes = this.#writes;
    const applied = await this.readApplied();
    if (!applied) return null;
    if (!applied.prefixes_sha256) return this.#read(FILES.prefixesBefore);
    const [base, log] = await Promise.all([this.#read(FILES.prefixesBase), this.#read(FILES.prefixesLog)]);
    if (!base) return null;
    const rebuilt = rebuildPrefixes(base, log, { revision_id: applied.revision_id, sha256: applied.prefixes_sha256 });
    if (rebuilt && writes === this.#writes) this.#tail = { sha256: rebuilt.sha256, end: rebuilt.end, records: rebuilt.records, baseSize: base.length };
    return rebuilt?.section ?? null;
  }

  /**
   * Records a confirmed apply: the bundle and its prefixes first, then the record. A delta that
   * applies to the section the files give now is appended to the log (only its bytes written),
   * unless the log is due to be folded in; anything else writes the whole section as the new base
   * and removes the log. A crash before the record leaves the old one, which names the section
   * it applied (`prefixes_sha256`): the log is read up to it, a record after it is ignored and cut
   * off by the next append, and a new base read with an old record gives no section at all (the
   * full bundle is fetched). The files are written side by side, and one fsync of the directory
   * makes them durable before the record is written.
   */
  async recordApplied(bundle: Uint8Array, record: AppliedRecord, prefixes?: AppliedPrefixes): Promise<void> {
    const delta = prefixes?.delta ?? null;
    const sha256 = prefixes ? (delta?.sha256 ?? sha256Hex(prefixes.section)) : undefined;
    const parsed = AppliedSchema.parse({ ...record, prefixes_sha256: sha256 });
    const writes = ++this.#writes;
    this.#applied = undefined;
    const tail = this.#tail;
    // Forgotten until this write is done: one that fails leaves the log as the disk has it.
    this.#tail = null;
    const logged =
      delta && tail?.sha256 === delta.baseSha256
        ? encodeLogRecord({ revision_id: parsed.revision_id, baseSha256: delta.baseSha256, sha256: delta.sha256, delta: delta.bytes })
        : null;
    const apart = { syncDirectory: false };
    const bundleWritten = writeFileAtomic(join(this.dir, FILES.bundle), bundle, PRIVATE, apart);
    let next: PrefixesTail | null = null;
    if (prefixes && sha256) {
      if (logged && tail && !compactionDue(tail, logged.length)) {
        await Promise.all([this.#appendLog(tail.end, logged), bundleWritten]);
        next = { sha256, end: tail.end + logged.length, records: tail.records + 1, baseSize: tail.baseSize };
      } else {
        await Promise.all([
          writeFileAtomic(join(this.dir, FILES.prefixesBase), prefixes.section, PRIVATE, apart),
          this.#remove(FILES.prefixesLog),
          // Gone, so that an agent before the log, started on this directory, finds no section
          // rather than an old one (it would put BIRD's files back from it at its start).
          this.#remove(FILES.prefixesBefore),
          bundleWritten,
        ]);
        next = { sha256, end: 0, records: 0, baseSize: prefixes.section.length };
      }
    } else await bundleWritten;
    await syncDirectory(this.dir);
    await this.#writeJson(FILES.applied, parsed);
    if (writes === this.#writes) {
      this.#applied = Object.freeze(parsed);
      this.#tail = next;
    }
  }

  /** The log cut after its last record that counts, then `record` written there and fsynced. */
  async #appendLog(end: number, record: Buffer): Promise<void> {
    // Never through a symlink planted at its name (ELOOP), like every other file here.
    const file = await open(join(this.dir, FILES.prefixesLog), constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW, PRIVATE);
    try {
      await file.chmod(PRIVATE);
      await file.truncate(end);
      await file.write(record, 0, record.length, end);
      await file.sync();
    } finally {
      await file.close();
    }
  }

  readRefused(): Promise<RefusedIssue | null> {
    return this.#readJson(FILES.refused, RefusedSchema);
  }

  /** Remembers a refusal; null forgets it (after an apply succeeded). */
  writeRefused(refused: RefusedIssue | null): Promise<void> {
    return refused ? this.#writeJson(FILES.refused, RefusedSchema.parse(refused)) : this.#remove(FILES.refused);
  }

  async #remove(name: string): Promise<void> {
    await unlink(join(this.dir, name)).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== "ENOENT") throw new StateError(`cannot remove ${join(this.dir, name)}: ${error.message}`, { cause: error });
    });
  }

  async #read(name: string): Promise<Buffer | null> {
    try {
      return await readFile(join(this.dir, name));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw new StateError(`cannot read ${join(this.dir, name)}: ${(error as Error).message}`, { cause: error });
    }
  }

  async #readJson<T>(name: string, schema: z.ZodType<T>): Promise<T | null> {
    const bytes = await this.#read(name);
    if (!bytes) return null;
    let value: unknown;
    try {
      value = JSON.parse(bytes.toString("utf8"));
    } catch (cause) {
      throw new StateError(`${join(this.dir, name)} is not JSON`, { cause });
    }
    const parsed = schema.safeParse(value);
    if (!parsed.success) throw new StateError(`${join(this.dir, name)} does not hold what the agent wrote: ${parsed.error.issues[0]?.message}`);
    return parsed.data;
  }

  async #writeJson(name: string, value: unknown): Promise<void> {
    await writeFileAtomic(join(this.dir, name), `${JSON.stringify(value, null, 2)}\n`, PRIVATE);
  }
}

const compactionDue = (tail: PrefixesTail, recordSize: number) => tail.records >= COMPACT_RECORDS || (tail.end + recordSize) * COMPACT_FRACTION > tail.baseSize;
