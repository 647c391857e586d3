import { setImmediate as nextTurn } from "node:timers/promises";
import { SEALED_BYTES_OVERHEAD, type SecretBox } from "./secret-box.js";

/**
 * A stored bundle envelope sealed as a run of pieces, each `chunk` plain bytes (the last one
 * shorter) sealed on its own: piece i starts at i × (chunk + 28) in the stored bytes, so a
 * reader fetches and opens only the pieces that cover the slice it streams, never the whole
 * envelope. 256 KiB matches the gRPC stream's slice, so each slice opens exactly one piece.
 */
export const ENVELOPE_CHUNK_BYTES = 256 * 1024;

/** Pieces sealed or opened between two yields: a 21 MiB envelope does not hold the event loop in one go. */
const PIECES_PER_TURN = 16;

const pieceBytes = (chunk: number) => chunk + SEALED_BYTES_OVERHEAD;

export async function sealEnvelope(box: SecretBox, plain: Buffer, chunk: number = ENVELOPE_CHUNK_BYTES): Promise<Buffer> {
  if (!Number.isSafeInteger(chunk) || chunk < 1) throw new Error("the sealed piece size must be a positive integer");
  const pieces: Buffer[] = [];
  for (let offset = 0, i = 0; offset < plain.length; offset += chunk, i++) {
    if (i > 0 && i % PIECES_PER_TURN === 0) await nextTurn();
    pieces.push(box.sealBytes(plain.subarray(offset, offset + chunk)));
  }
  return Buffer.concat(pieces);
}

/** Opens stored pieces laid end to end (a whole envelope, or the run `sealedRange` named). */
export async function openPieces(box: SecretBox, sealed: Buffer, chunk: number): Promise<Buffer> {
  const step = pieceBytes(chunk);
  const plain: Buffer[] = [];
  for (let at = 0, i = 0; at < sealed.length; at += step, i++) {
    if (i > 0 && i % PIECES_PER_TURN === 0) await nextTurn();
    plain.push(box.openBytes(sealed.subarray(at, at + step)));
  }
  return Buffer.concat(plain);
}

/**
 * The stored bytes that hold plain bytes [offset, offset + length): `from` and `length` in the
 * sealed envelope (the database clips a run past its end), and where the wanted bytes start in
 * what those pieces open to.
 */
export function sealedRange(chunk: number, offset: number, length: number): { from: number; length: number; skip: number } {
  if (length <= 0) return { from: 0, length: 0, skip: 0 };
  const first = Math.floor(offset / chunk);
  const last = Math.floor((offset + length - 1) / chunk);
  return { from: first * pieceBytes(chunk), length: (last - first + 1) * pieceBytes(chunk), skip: offset - first * chunk };
}
