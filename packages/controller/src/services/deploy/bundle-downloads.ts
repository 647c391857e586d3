import { pipeline, Readable } from "node:stream";
import { createGzip } from "node:zlib";
import type { AgentAnnouncement } from "@rlc/shared/bundle";
import { AppError } from "@rlc/shared/errors";
import type { Db } from "../../db/connect.js";
import type { Principal } from "../access/context.js";
import type { BundleLimiter } from "./bundle-limiter.js";
import { type DeflatedPart, deflatePart, GZIP_HEADER, gzipTrailer } from "./gzip-parts.js";
import type { BundleReader, NodeService } from "./node.js";
import type { createKeptBySize } from "./section-cache.js";

/** Seconds a refused download is told to wait: one key's transfer in flight, or a full line. */
export const BUNDLE_RETRY_AFTER_S = { key: 2, busy: 5 } as const;

/** What the HTTP bundle route sends. */
export interface BundleDownload {
  /** `application/octet-stream` for an rl-bundle/2, `application/json` for an rl-bundle/1 envelope. */
  type: string;
  gzip: boolean;
  /** The body's length when known before it is sent. */
  length: number | null;
  /** Read from storage as the client takes it; the transfer's place goes back when it closes. */
  body: Readable;
}

export interface BundleDownloadDeps {
  /** Where the bundles are read. */
  sql: Db;
  /** Looked up at each download (`node.bundleReader`): who may have the bundle, and its reader. */
  node: Pick<NodeService, "bundleReader">;
  /** The places shared with gRPC GetBundle. */
  limiter: BundleLimiter;
  /** Sections compressed before, by section key, accounted at their plain size. */
  compressed: ReturnType<typeof createKeptBySize<DeflatedPart>>;
  /** Bytes read from storage (and written) at a time; memory held per download is about one. */
  chunkBytes: number;
}

/** `bytes` in slices of `size` (views, not copies), so a large buffer is written at the client's pace. */
function* slices(parts: Buffer[], size: number): Generator<Buffer> {
  for (const part of parts) for (let at = 0; at < part.length; at += size) yield part.subarray(at, at + size);
}

/** The bundle as stored, `chunkBytes` at a time, read only as the stream is read. */
function plainBody(reader: BundleReader, chunkBytes: number): Readable {
  async function* chunks() {
    for (let offset = 0; offset < reader.size; ) {
      const data = await reader.read(offset, chunkBytes);
      if (data.length === 0) return;
      offset += data.length;
      yield data;
    }
  }
  return Readable.from(chunks(), { objectMode: false, highWaterMark: chunkBytes });
}

/**
 * The HTTP bundle route's work: a place among the bundle transfers (the gRPC limits: per key at
 * once, all keys together), then the bundle streamed from storage, never whole in memory, and
 * with `gzip` the section compressed once per process for every download that follows.
 */
export function createBundleDownloads(deps: BundleDownloadDeps) {
  let sectionsCompressed = 0;

  /** gzip of head + section: the head compressed here, the section from the cache (or once, for it). */
  const gzippedParts = async (reader: BundleReader): Promise<Buffer[] | null> => {
    const parts = reader.parts;
    if (!parts || !deps.compressed.keeps(parts.section.size)) return null;
    const [head, section] = await Promise.all([
      deflatePart(parts.head, false),
      deps.compressed.get(parts.section.key, parts.section.size, async () => {
        sectionsCompressed++;
        return deflatePart(await reader.read(parts.head.length, parts.section.size), true);
      }),
    ]);
    return [GZIP_HEADER, head.deflated, section.deflated, gzipTrailer([head, section])];
  };

  return {
    limiter: deps.limiter,
    /** Sections this process compressed (a download that found its section compressed adds none). */
    sectionsCompressed: () => sectionsCompressed,

    /**
     * The bundle of `revisionId` for the speaker (see `node.bundleReader` for who receives it),
     * as a stream. Refused while the key has its transfers in flight (429) or the line for a
     * place is full (503), with Retry-After; `gone` settles when the client left.
     */
    async open(
      principal: Principal,
      speakerId: string,
      revisionId: number,
      baseRevisionId: number | null,
      o: { gzip: boolean; gone: Promise<unknown>; accepts?: AgentAnnouncement | null },
    ): Promise<BundleDownload> {
      const place = await deps.limiter.acquire(principal.keyId, o.gone);
      if (!place.ok) {
        if (place.reason === "key") {
          throw new AppError(
            "rate_limited",
            `this key has ${deps.limiter.limits.bundlesPerKey} bundle transfers in flight already; try again in ${BUNDLE_RETRY_AFTER_S.key} s`,
            { headers: { "retry-after": String(BUNDLE_RETRY_AFTER_S.key) } },
          );
        }
        throw new AppError("not_ready", "the controller serves too many bundles right now; try again later", {
          headers: { "retry-after": String(BUNDLE_RETRY_AFTER_S.busy) },
        });
      }
      try {
        const reader = await deps.node.bundleReader(deps.sql, principal, speakerId, revisionId, baseRevisionId, o.accepts ?? null);
        const type = reader.parts ? "application/octet-stream" : "application/json";
        let download: BundleDownload;
        const gzipped = o.gzip ? await gzippedParts(reader) : null;
        if (gzipped) {
          const length = gzipped.reduce((n, b) => n + b.length, 0);
          download = { type, gzip: true, length, body: Readable.from(slices(gzipped, deps.chunkBytes), { objectMode: false }) };
        } else if (o.gzip) {
          // Too large to keep compressed (or an rl-bundle/1): compressed as it streams.
          const gzip = createGzip({ level: 1 });
          pipeline(plainBody(reader, deps.chunkBytes), gzip, () => undefined);
          download = { type, gzip: true, length: null, body: gzip };
        } else {
          download = { type, gzip: false, length: reader.size, body: plainBody(reader, deps.chunkBytes) };
        }
        download.body.once("close", place.release);
        // A client that left (before or during the transfer) ends the stream, and so frees the place.
        void o.gone.then(() => download.body.destroy());
        return download;
      } catch (error) {
        place.release();
        throw error;
      }
    },
  };
}

export type BundleDownloads = ReturnType<typeof createBundleDownloads>;
