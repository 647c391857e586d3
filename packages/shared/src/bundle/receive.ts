import { createHash, type Hash } from "node:crypto";
import { BUNDLE_FORMAT_V2, type BundleHeadV2, type BundleLayoutV2, bundleLayoutV2, isBundleV2 } from "./bundle-v2.js";
import { BundleError } from "./errors.js";
import type { ReceivedBundle } from "./payload.js";

export interface BundleReceiverOptions {
  /** The size the sender announced, when it did: one buffer of it, no copy as chunks come. */
  expectedSize?: number;
  /** Refused (`too_large`) as soon as more than this has come. */
  maxBytes: number;
  /**
   * An `rl-bundle/2`'s signed head, as soon as it is in (usually with the first chunk); a throw
   * stops the receiving there. For {@link verifyBundleHeadV2}, so that a forged, stale or
   * misaddressed bundle costs one chunk, not the whole transfer.
   */
  onHead?: (head: BundleHeadV2) => void;
}

/**
 * Takes a bundle in as its chunks arrive (gRPC's or an HTTP body's): keeps them in one buffer,
 * hashes the whole as it comes (the transport's check), and of an `rl-bundle/2` reads the head
 * as soon as it is in, hands it to `onHead`, then hashes the config and the section as their
 * bytes come. What it hands on ({@link ReceivedBundle}) spares the verifier those hashes: the
 * verification is done while receiving but for what needs the last byte.
 */
export class BundleReceiver {
  readonly #o: BundleReceiverOptions;
  #buffer: Buffer;
  #size = 0;
  readonly #whole = createHash("sha256");
  /** undefined: not known yet; null: not an rl-bundle/2 (the verifier reads it whole). */
  #layout: BundleLayoutV2 | null | undefined;
  #config: Hash | null = null;
  #section: Hash | null = null;
  /** How far the part hashes have been fed. */
  #hashed = 0;

  constructor(options: BundleReceiverOptions) {
    this.#o = options;
    if (options.expectedSize !== undefined && options.expectedSize > options.maxBytes) {
      throw new BundleError("too_large", `bundle has ${options.expectedSize} bytes, the cap is ${options.maxBytes}`);
    }
    this.#buffer = Buffer.allocUnsafe(options.expectedSize ?? 64 * 1024);
  }

  get size(): number {
    return this.#size;
  }

  push(data: Uint8Array): void {
    const end = this.#size + data.length;
    if (end > this.#o.maxBytes) throw new BundleError("too_large", `bundle has more than ${this.#o.maxBytes} bytes, the cap`);
    if (end > this.#buffer.length) {
      if (this.#o.expectedSize !== undefined) throw new BundleError("malformed", `bundle runs past the ${this.#o.expectedSize} bytes announced`);
      const bigger = Buffer.allocUnsafe(Math.min(this.#o.maxBytes, Math.max(end, this.#buffer.length * 2)));
      this.#buffer.copy(bigger, 0, 0, this.#size);
      this.#buffer = bigger;
    }
    this.#buffer.set(data, this.#size);
    this.#size = end;
    this.#whole.update(data);
    if (this.#layout === undefined) this.#readHead();
    if (this.#layout) this.#hashParts();
  }

  /** The bytes received (no copy when the size was announced) and what was hashed of them. */
  finish(): ReceivedBundle {
    if (this.#o.expectedSize !== undefined && this.#size !== this.#o.expectedSize) {
      throw new BundleError("malformed", `bundle ended after ${this.#size} of the ${this.#o.expectedSize} bytes announced`);
    }
    const bytes = this.#size === this.#buffer.length ? this.#buffer : Buffer.from(this.#buffer.subarray(0, this.#size));
    const layout = this.#layout;
    // A section that never started (the bundle ended inside its head or config): the verifier refuses it.
    const v2 =
      layout && this.#config && this.#section && this.#size >= layout.sectionStart
        ? {
            configStart: layout.configStart,
            sectionStart: layout.sectionStart,
            configSha256: this.#config.digest("hex"),
            sectionSha256: this.#section.digest("hex"),
          }
        : null;
    return { bytes, sha256: this.#whole.digest("hex"), v2 };
  }

  #readHead(): void {
    const got = this.#buffer.subarray(0, this.#size);
    if (got.length < BUNDLE_V2_MAGIC_LENGTH) return;
    if (!isBundleV2(got)) {
      this.#layout = null;
      return;
    }
    const layout = bundleLayoutV2(got);
    if (!layout) return;
    this.#layout = layout;
    this.#config = createHash("sha256");
    this.#section = createHash("sha256");
    this.#hashed = layout.configStart;
    this.#o.onHead?.({
      keyId: layout.keyId,
      header: got.subarray(layout.headerStart, layout.signatureStart),
      signature: got.subarray(layout.signatureStart, layout.signatureStart + 64),
    });
  }

  #hashParts(): void {
    const layout = this.#layout as BundleLayoutV2;
    if (this.#hashed < layout.sectionStart) {
      const to = Math.min(this.#size, layout.sectionStart);
      if (to > this.#hashed) (this.#config as Hash).update(this.#buffer.subarray(this.#hashed, to));
      this.#hashed = Math.max(this.#hashed, to);
    }
    if (this.#hashed >= layout.sectionStart && this.#size > this.#hashed) {
      (this.#section as Hash).update(this.#buffer.subarray(this.#hashed, this.#size));
      this.#hashed = this.#size;
    }
  }
}

/** `rl-bundle/2` and its newline: fewer bytes than that cannot tell the format. */
const BUNDLE_V2_MAGIC_LENGTH = BUNDLE_FORMAT_V2.length + 1;

/** `bytes` taken in as one chunk: a {@link ReceivedBundle} for bytes that did not come through a receiver (a file, a test). */
export function receiveBundle(bytes: Uint8Array, options: Omit<BundleReceiverOptions, "expectedSize"> = { maxBytes: Number.MAX_SAFE_INTEGER }): ReceivedBundle {
  const receiver = new BundleReceiver({ ...options, expectedSize: bytes.length });
  receiver.push(bytes);
  return receiver.finish();
}
