import { promisify } from "node:util";
import { constants, crc32, deflateRaw } from "node:zlib";

/**
 * One gzip stream (RFC 1952, one member) put together from parts compressed apart: a bundle is
 * its speaker's head and then its revision's section, the same for every speaker, so the section
 * is compressed once and each download compresses only its few KiB of head. Several gzip members
 * one after the other would be simpler, but clients such as curl decode only the first.
 */

/** A part's raw deflate blocks, with the CRC-32 and size of its plain bytes. */
export interface DeflatedPart {
  deflated: Buffer;
  crc: number;
  size: number;
}

const deflateRawAsync = promisify(deflateRaw);

/**
 * `plain` as raw deflate, on libuv's thread pool. A part that others follow (`last` false) ends
 * on a sync flush: on a byte boundary, with no final block, so the next part's blocks can follow
 * as they are (a part refers back only within itself).
 */
export async function deflatePart(plain: Buffer, last: boolean): Promise<DeflatedPart> {
  const deflated = await deflateRawAsync(plain, { level: 1, finishFlush: last ? constants.Z_FINISH : constants.Z_SYNC_FLUSH });
  return { deflated, crc: crc32(plain), size: plain.length };
}

/** The fixed header: deflate, no flags, no time, unknown OS. */
export const GZIP_HEADER = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);

/** The trailer after `parts`: the CRC-32 of all their plain bytes, and their size modulo 2^32. */
export function gzipTrailer(parts: DeflatedPart[]): Buffer {
  let crc = 0;
  let size = 0;
  for (const part of parts) {
    crc = crc32Combine(crc, part.crc, part.size);
    size += part.size;
  }
  const trailer = Buffer.alloc(8);
  trailer.writeUInt32LE(crc, 0);
  trailer.writeUInt32LE(size % 2 ** 32, 4);
  return trailer;
}

/** A 32×32 bit matrix over GF(2) times a vector. */
function gf2Times(matrix: Uint32Array, vector: number): number {
  let sum = 0;
  for (let i = 0; vector !== 0; i++, vector >>>= 1) if (vector & 1) sum ^= matrix[i]!;
  return sum >>> 0;
}

function gf2Square(square: Uint32Array, matrix: Uint32Array): void {
  for (let n = 0; n < 32; n++) square[n] = gf2Times(matrix, matrix[n]!);
}

/**
 * The CRC-32 of A followed by B from the CRC-32 of each and B's length, without reading either
 * (zlib's crc32_combine): the section's CRC is worked out once, with its compression.
 */
export function crc32Combine(crcA: number, crcB: number, lengthB: number): number {
  if (lengthB <= 0) return crcA >>> 0;
  // The operator that appends one zero bit, then squared to append 2, 4, 8 … bits.
  const odd = new Uint32Array(32);
  const even = new Uint32Array(32);
  odd[0] = 0xedb88320;
  for (let n = 1; n < 32; n++) odd[n] = (1 << (n - 1)) >>> 0;
  gf2Square(even, odd); // two zero bits
  gf2Square(odd, even); // four zero bits
  let crc = crcA >>> 0;
  let left = lengthB;
  for (;;) {
    gf2Square(even, odd); // first pass: one zero byte
    if (left % 2) crc = gf2Times(even, crc);
    left = Math.floor(left / 2);
    if (left === 0) break;
    gf2Square(odd, even);
    if (left % 2) crc = gf2Times(odd, crc);
    left = Math.floor(left / 2);
    if (left === 0) break;
  }
  return (crc ^ crcB) >>> 0;
}
