// Reads a response body under a byte cap that counts both the bytes on the wire and the bytes
// after decompression. zlib streams honour back-pressure (inflate pauses while its output buffer
// is full), so a gzip bomb is stopped after about `maxBytes` of output: nothing beyond the cap,
// plus one zlib chunk, is ever produced.
import type { Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGunzip, createUnzip } from "node:zlib";
import { OutboundNetworkError, OutboundTooLargeError } from "./outbound-errors.js";

export interface BodyResult {
  body: Buffer;
  /** Bytes received, before decompression. */
  wireBytes: number;
}

/**
 * Decoders for a Content-Encoding header, outermost last (RFC 9110 8.4: listed in the order
 * applied). `deflate` uses createUnzip, which reads the zlib wrapper HTTP specifies (and gzip);
 * raw deflate streams, sent by a few old servers, fail as undecodable.
 */
function decodersFor(contentEncoding: string | undefined): Transform[] {
  if (!contentEncoding) return [];
  const codings = contentEncoding
    .split(",")
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== "" && c !== "identity");
  return codings.reverse().map((coding) => {
    if (coding === "gzip" || coding === "x-gzip") return createGunzip();
    if (coding === "deflate") return createUnzip();
    throw new OutboundNetworkError(`unsupported Content-Encoding ${coding}`);
  });
}

export async function readBody(source: Readable, contentEncoding: string | undefined, maxBytes: number, signal: AbortSignal): Promise<BodyResult> {
  let decoders: Transform[];
  try {
    decoders = decodersFor(contentEncoding);
  } catch (err) {
    source.destroy();
    throw err;
  }
  let wireBytes = 0;
  let size = 0;
  const chunks: Buffer[] = [];
  const countWire = async function* (input: AsyncIterable<Buffer>) {
    // Also capped: endless empty gzip members would otherwise decompress to nothing forever.
    for await (const chunk of input) {
      wireBytes += chunk.length;
      if (wireBytes > maxBytes) throw new OutboundTooLargeError(maxBytes);
      yield chunk;
    }
  };
  const collect = async (input: AsyncIterable<Buffer>) => {
    for await (const chunk of input) {
      size += chunk.length;
      if (size > maxBytes) throw new OutboundTooLargeError(maxBytes);
      chunks.push(chunk);
    }
  };
  try {
    // The overloads of pipeline() cannot type a variable number of stages.
    await (pipeline as (...args: unknown[]) => Promise<void>)(source, countWire, ...decoders, collect, { signal });
  } catch (err) {
    if (err instanceof OutboundTooLargeError || signal.aborted) throw err;
    if ((err as { code?: unknown }).code?.toString().startsWith("Z_")) {
      throw new OutboundNetworkError("response body could not be decompressed", { cause: err });
    }
    throw err;
  }
  return { body: Buffer.concat(chunks, size), wireBytes };
}
