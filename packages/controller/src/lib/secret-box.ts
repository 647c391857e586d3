import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { link, mkdir, open, readFile, unlink } from "node:fs/promises";
import { dirname, join } from "node:path";

/**
 * Seals the secrets the controller must keep readable for itself (peer passwords, DoH header
 * values, signing seeds, stored idempotent answers that carry a secret) with one data key:
 * AES-256-GCM, a fresh 96-bit nonce per value, the text `v1.<base64url(nonce|tag|ciphertext)>`.
 * A value sealed under another key, or altered, does not open (GCM's tag fails).
 */
export interface SecretBox {
  seal(plain: string | Buffer): string;
  open(sealed: string): Buffer;
  openText(sealed: string): string;
  /** Raw `nonce(12) | tag(16) | ciphertext`, no prefix or base64: for large binary values. */
  sealBytes(plain: Buffer): Buffer;
  openBytes(sealed: Buffer): Buffer;
}

/** Bytes `sealBytes` adds to a value: the nonce and the tag. */
export const SEALED_BYTES_OVERHEAD = 28;

const PREFIX = "v1.";

export function createSecretBox(key: Buffer): SecretBox {
  if (key.length !== 32) throw new Error("the data key must be 32 bytes");
  return {
    seal(plain) {
      return PREFIX + this.sealBytes(typeof plain === "string" ? Buffer.from(plain, "utf8") : plain).toString("base64url");
    },
    open(sealed) {
      if (!sealed.startsWith(PREFIX)) throw new Error("not a sealed value");
      return this.openBytes(Buffer.from(sealed.slice(PREFIX.length), "base64url"));
    },
    sealBytes(plain) {
      const nonce = randomBytes(12);
      const cipher = createCipheriv("aes-256-gcm", key, nonce);
      const body = Buffer.concat([cipher.update(plain), cipher.final()]);
      return Buffer.concat([nonce, cipher.getAuthTag(), body]);
    },
    openBytes(raw) {
      if (raw.length < SEALED_BYTES_OVERHEAD) throw new Error("not a sealed value");
      const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, 12));
      decipher.setAuthTag(raw.subarray(12, SEALED_BYTES_OVERHEAD));
      return Buffer.concat([decipher.update(raw.subarray(SEALED_BYTES_OVERHEAD)), decipher.final()]);
    },
    openText(sealed) {
      return this.open(sealed).toString("utf8");
    },
  };
}

/**
 * What every read shows in place of a secret (a DoH header value, a peer's password in a
 * preview): the same mask everywhere, and the value a client sends back to keep a stored one.
 */
export const MASKED_SECRET = "********";

/** Each value of a map sealed (a DoH profile's header values), the names kept in the clear. */
export const sealEach = (box: SecretBox, values: Record<string, string>): Record<string, string> =>
  Object.fromEntries(Object.entries(values).map(([name, value]) => [name, box.seal(value)]));

/** True for a value `seal` produced (so a migration can tell sealed from legacy plain text). */
export const isSealed = (value: string) => value.startsWith(PREFIX);

/**
 * The data key: `file` when given (32 raw bytes, or 64 hex / 44 base64 characters), else
 * `<dataDir>/secret.key`, made once (mode 0600) on first start. Replicas on several machines
 * must all be given the same file.
 */
export async function loadDataKey(opts: { file?: string | undefined; dataDir: string }): Promise<{ key: Buffer; path: string; created: boolean }> {
  const path = opts.file ?? join(opts.dataDir, "secret.key");
  if (!opts.file) {
    await mkdir(dirname(path), { recursive: true, mode: 0o700 });
    // Written whole under a private name, then linked into place: a controller starting at the
    // same moment either links first or finds the complete file, never a half-written one.
    const tmp = `${path}.${process.pid}.${randomBytes(4).toString("hex")}`;
    const fh = await open(tmp, "wx", 0o600);
    try {
      await fh.writeFile(randomBytes(32).toString("base64"));
      await fh.sync();
    } finally {
      await fh.close();
    }
    try {
      await link(tmp, path);
      return { key: await readKey(path), path, created: true };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    } finally {
      await unlink(tmp).catch(() => {});
    }
  }
  return { key: await readKey(path), path, created: false };
}

async function readKey(path: string): Promise<Buffer> {
  const raw = await readFile(path);
  if (raw.length === 32) return raw;
  const text = raw.toString("utf8").trim();
  const key = /^[0-9a-f]{64}$/i.test(text) ? Buffer.from(text, "hex") : Buffer.from(text, "base64");
  if (key.length !== 32) throw new Error(`${path} must hold a 32-byte key (raw, hex or base64)`);
  return key;
}
