import { mkdir, readFile, unlink } from "node:fs/promises";
import { join } from "node:path";
import { assertPrivateDirectory, syncDirectory, writeFileAtomic } from "@rlc/shared/bird";
import { z } from "zod";

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
  prefixes: "last-prefixes.txt",
  applied: "applied.json",
  refused: "refused.json",
} as const;
const PRIVATE = 0o600;

/**
 * RL_STATE_DIR: node identity, pinned signing keys, the last good bundle (its exact bytes, so
 * it can be verified again), what was last applied and the issue last refused. Each file is replaced atomically
 * (writeFileAtomic), so a crash at any point leaves the previous version whole.
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
   * to. Null before the first rl-bundle/2 was applied.
   */
  async readLastPrefixes(): Promise<Uint8Array | null> {
    return this.#read(FILES.prefixes);
  }

  /**
   * Records a confirmed apply: the bundle (and its full prefix section) first, then the record.
   * A crash in between leaves the old record, so the agent believes the older sequence and
   * simply applies again; a delta over the section then fails its base check and the full
   * bundle is fetched. The bundle and the section are written side by side, and one fsync of
   * the directory makes both durable before the record is written.
   */
  async recordApplied(bundle: Uint8Array, record: AppliedRecord, prefixSection?: Uint8Array): Promise<void> {
    const parsed = AppliedSchema.parse(record);
    const writes = ++this.#writes;
    this.#applied = undefined;
    const apart = { syncDirectory: false };
    await Promise.all([
      prefixSection ? writeFileAtomic(join(this.dir, FILES.prefixes), prefixSection, PRIVATE, apart) : null,
      writeFileAtomic(join(this.dir, FILES.bundle), bundle, PRIVATE, apart),
    ]);
    await syncDirectory(this.dir);
    await this.#writeJson(FILES.applied, parsed);
    if (writes === this.#writes) this.#applied = Object.freeze(parsed);
  }

  readRefused(): Promise<RefusedIssue | null> {
    return this.#readJson(FILES.refused, RefusedSchema);
  }

  /** Remembers a refusal; null forgets it (after an apply succeeded). */
  async writeRefused(refused: RefusedIssue | null): Promise<void> {
    if (refused) return this.#writeJson(FILES.refused, RefusedSchema.parse(refused));
    await unlink(join(this.dir, FILES.refused)).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== "ENOENT") throw new StateError(`cannot remove ${join(this.dir, FILES.refused)}: ${error.message}`, { cause: error });
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
