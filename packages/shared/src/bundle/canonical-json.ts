import { BundleError } from "./errors.js";

/**
 * Deterministic JSON: object keys sorted by UTF-16 code units (as RFC 8785 sorts them), no
 * whitespace, strings and numbers written as JSON.stringify writes them. The same value always
 * gives the same bytes, so a signature or a digest over them can be checked on another machine.
 *
 * Refused (TypeError), because they have no single JSON form: non-finite numbers, bigint,
 * functions, symbols, and `undefined` inside arrays. `undefined` object members are left out,
 * as JSON.stringify does, so optional fields that are absent and fields set to undefined agree.
 */
export function canonicalJson(value: unknown): string {
  const out: string[] = [];
  write(value, out, "$");
  return out.join("");
}

/** The UTF-8 bytes of {@link canonicalJson}. */
export function canonicalJsonBytes(value: unknown): Uint8Array {
  return new TextEncoder().encode(canonicalJson(value));
}

/** The value of signed JSON bytes; `malformed`, naming `what`, when they are not UTF-8 JSON. */
export function parseJsonBytes(bytes: Uint8Array, what: string): unknown {
  try {
    return JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (cause) {
    throw new BundleError("malformed", `${what} is not UTF-8 JSON`, { cause });
  }
}

function write(value: unknown, out: string[], path: string): void {
  if (value === null) {
    out.push("null");
    return;
  }
  switch (typeof value) {
    case "string":
      out.push(JSON.stringify(value));
      return;
    case "boolean":
      out.push(value ? "true" : "false");
      return;
    case "number":
      if (!Number.isFinite(value)) throw new TypeError(`canonicalJson: ${path} is not a finite number`);
      out.push(JSON.stringify(value));
      return;
    case "object":
      break;
    default:
      throw new TypeError(`canonicalJson: ${path} has type ${typeof value}`);
  }
  if (Array.isArray(value)) {
    out.push("[");
    value.forEach((item, i) => {
      if (item === undefined) throw new TypeError(`canonicalJson: ${path}[${i}] is undefined`);
      if (i > 0) out.push(",");
      write(item, out, `${path}[${i}]`);
    });
    out.push("]");
    return;
  }
  const record = value as Record<string, unknown>;
  // Dates and other objects with toJSON would otherwise be written as their fields.
  if (typeof (record as { toJSON?: unknown }).toJSON === "function") {
    write((record as { toJSON: () => unknown }).toJSON(), out, path);
    return;
  }
  const keys = Object.keys(record)
    .filter((k) => record[k] !== undefined)
    .sort();
  out.push("{");
  keys.forEach((key, i) => {
    if (i > 0) out.push(",");
    out.push(JSON.stringify(key), ":");
    write(record[key], out, `${path}.${key}`);
  });
  out.push("}");
}
