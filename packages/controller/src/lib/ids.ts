import { randomBytes } from "node:crypto";

// The one piece of module state in the controller: UUIDv7 ids must stay monotonic within a
// process even when two are made in the same millisecond (RFC 9562 §6.2 method 1, a 12-bit
// counter in rand_a). Keyset pagination orders by id, so this keeps list order = insert order.
let lastMs = 0;
let seq = 0;

/** A UUIDv7 string (time-ordered). */
export function uuidv7(): string {
  let ms = Date.now();
  if (ms <= lastMs) {
    seq++;
    if (seq > 0xfff) {
      lastMs++;
      seq = 0;
    }
    ms = lastMs;
  } else {
    lastMs = ms;
    seq = randomBytes(2).readUInt16BE(0) & 0x3ff; // start low so the counter rarely overflows
  }
  const b = randomBytes(16);
  b.writeUIntBE(ms, 0, 6);
  b[6] = 0x70 | (seq >> 8);
  b[7] = seq & 0xff;
  b[8] = 0x80 | (b[8]! & 0x3f);
  const h = b.toString("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
