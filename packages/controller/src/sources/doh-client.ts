// One DNS question over DoH: RFC 8484 wire format (GET `?dns=` or POST) or the
// `application/dns-json` API, always through the outbound client so the address policy holds.
//
// HTTP version: https lets ALPN choose (RFC 8484 recommends HTTP/2; servers fall back to 1.1).
// Plain http has no ALPN, so we guess and fall back once: wire profiles try h2c (prior
// knowledge) first, because the DoH servers reachable over cleartext (unbound's
// `http-notls-downstream`, dnsdist) speak it and unbound speaks nothing else; json profiles try
// HTTP/1.1 first, because the dns-json API is served by ordinary web servers. When the first
// try fails at the protocol level (the server closed or reset the connection, or sent garbage),
// the other version is tried with the time left. Refused connections are not retried.
import { formatIpValue, parseIpValue } from "@rlc/shared/prefix";
import * as dnsPacket from "dns-packet";
import { DohMalformedError } from "./doh-errors.js";
import { type OutboundClient, OutboundNetworkError, type OutboundResponse } from "./outbound.js";

export type DohQueryType = "A" | "AAAA";

/** The fields of a DohProfile that a query needs. */
export interface DohProfileSpec {
  url: string;
  method: "GET" | "POST";
  format: "wire" | "json";
  timeout_ms: number;
  headers?: Record<string, string>;
}

export interface DohAnswer {
  type: "A" | "AAAA" | "CNAME";
  /** Owner name: lower case, no trailing dot. */
  name: string;
  /** Canonical address text, or the CNAME target (lower case, no trailing dot). */
  data: string;
  ttl: number;
}

export interface DohResponse {
  /** A, AAAA and CNAME records of the answer section; other types are left out. */
  answers: DohAnswer[];
  /** `NOERROR`, `NXDOMAIN`, `SERVFAIL`, `REFUSED`, ... (`RCODE<n>` for unnamed ones). */
  rcode: string;
}

export interface DohQueryOptions {
  /** Whole query, protocol fallback included. Default: the profile's `timeout_ms`. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

const WIRE_TYPE = "application/dns-message";
const JSON_TYPE = "application/dns-json";
// A DNS message is at most 65 535 bytes; JSON spells the same answer out at a few times that.
const MAX_BYTES = 256 * 1024;
const RCODES = ["NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED", "YXDOMAIN", "YXRRSET", "NXRRSET", "NOTAUTH", "NOTZONE"];
const JSON_TYPES: Record<number, DohAnswer["type"]> = { 1: "A", 5: "CNAME", 28: "AAAA" };
// Failures that say nothing about the HTTP version spoken: another version would fail the same.
const NOT_PROTOCOL = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH"]);

export const normaliseName = (name: string): string => name.toLowerCase().replace(/\.$/, "");

export async function queryDoh(
  client: OutboundClient,
  profile: DohProfileSpec,
  name: string,
  type: DohQueryType,
  options: DohQueryOptions = {},
): Promise<DohResponse> {
  const qname = normaliseName(name);
  const url = new URL(profile.url);
  const timeoutMs = options.timeoutMs ?? profile.timeout_ms;
  const deadline = performance.now() + timeoutMs;
  const request = profile.format === "json" ? jsonRequest(url, qname, type) : wireRequest(url, profile.method, qname, type);
  const headers = { ...request.headers, ...profile.headers };

  const send = (http2: boolean) =>
    client.request(request.url, {
      method: request.method,
      headers,
      body: request.body,
      http2,
      timeoutMs: Math.max(1, Math.round(deadline - performance.now())),
      maxBytes: MAX_BYTES,
      signal: options.signal,
    });

  let response: OutboundResponse;
  if (url.protocol === "https:") {
    response = await send(true);
  } else {
    const h2cFirst = profile.format === "wire";
    try {
      response = await send(h2cFirst);
    } catch (err) {
      if (!isProtocolFailure(err) || performance.now() >= deadline) throw err;
      response = await send(!h2cFirst);
    }
  }
  return profile.format === "json" ? parseJson(response, qname, type) : parseWire(response, qname, type);
}

interface DohRequest {
  url: URL;
  method: "GET" | "POST";
  headers: Record<string, string>;
  body?: Uint8Array;
}

function wireRequest(url: URL, method: "GET" | "POST", qname: string, type: DohQueryType): DohRequest {
  // RFC 8484 4.1: id 0 so that GET answers are cacheable.
  const packet = dnsPacket.encode({
    type: "query",
    id: 0,
    flags: dnsPacket.RECURSION_DESIRED,
    questions: [{ type, name: qname, class: "IN" }],
  });
  if (method === "POST") {
    return { url, method, headers: { accept: WIRE_TYPE, "content-type": WIRE_TYPE }, body: packet };
  }
  const get = new URL(url);
  get.searchParams.set("dns", packet.toString("base64url"));
  return { url: get, method, headers: { accept: WIRE_TYPE } };
}

// The dns-json API is GET only (Google, Cloudflare); a POST profile asks it with GET too.
function jsonRequest(url: URL, qname: string, type: DohQueryType): DohRequest {
  const get = new URL(url);
  get.searchParams.set("name", qname);
  get.searchParams.set("type", type);
  return { url: get, method: "GET", headers: { accept: JSON_TYPE } };
}

function isProtocolFailure(err: unknown): boolean {
  if (!(err instanceof OutboundNetworkError)) return false;
  for (let cause: unknown = err, depth = 0; cause instanceof Error && depth < 6; cause = cause.cause, depth++) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code === "string" && NOT_PROTOCOL.has(code)) return false;
  }
  return true;
}

function checkContentType(response: OutboundResponse, expected: string, alsoOk: readonly string[] = []): void {
  const mediaType = (response.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
  // A missing type is tolerated; a wrong one is usually an HTML error page answered with 200.
  if (mediaType !== "" && mediaType !== expected && !alsoOk.includes(mediaType)) {
    throw new DohMalformedError(`expected ${expected}, got ${mediaType}`);
  }
}

function parseWire(response: OutboundResponse, qname: string, type: DohQueryType): DohResponse {
  checkContentType(response, WIRE_TYPE);
  let packet: dnsPacket.DecodedPacket;
  try {
    packet = dnsPacket.decode(response.body);
  } catch (err) {
    throw new DohMalformedError(`not a DNS message: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  if (packet.type !== "response") throw new DohMalformedError("DNS message is not a response");
  if (packet.id !== 0) throw new DohMalformedError(`DNS response id ${packet.id}, expected 0`);
  if (packet.flag_tc) throw new DohMalformedError("DNS response is truncated");
  const question = packet.questions?.[0];
  if (question && (normaliseName(question.name) !== qname || question.type !== type)) {
    throw new DohMalformedError(`DNS response answers ${question.name} ${question.type}, not ${qname} ${type}`);
  }
  const answers: DohAnswer[] = [];
  for (const record of packet.answers ?? []) {
    if (record.type !== "A" && record.type !== "AAAA" && record.type !== "CNAME") continue;
    if (record.class !== undefined && record.class !== "IN") continue;
    answers.push(checkedAnswer(record.type, record.name, record.data, record.ttl ?? 0));
  }
  return { answers, rcode: rcodeName((packet.flags ?? 0) & 0xf) };
}

function parseJson(response: OutboundResponse, qname: string, type: DohQueryType): DohResponse {
  checkContentType(response, JSON_TYPE, ["application/json"]);
  let doc: unknown;
  try {
    doc = JSON.parse(response.body.toString("utf8"));
  } catch (err) {
    throw new DohMalformedError("dns-json answer is not JSON", { cause: err });
  }
  if (!isObject(doc) || !Number.isInteger(doc.Status)) throw new DohMalformedError("dns-json answer has no Status");
  if (doc.TC === true) throw new DohMalformedError("DNS response is truncated");
  const question = Array.isArray(doc.Question) ? doc.Question[0] : undefined;
  if (isObject(question)) {
    const askedName = typeof question.name === "string" ? normaliseName(question.name) : qname;
    const askedType = typeof question.type === "number" ? JSON_TYPES[question.type] : type;
    if (askedName !== qname || askedType !== type) {
      throw new DohMalformedError(`dns-json answer is for ${String(question.name)} type ${String(question.type)}, not ${qname} ${type}`);
    }
  }
  if (doc.Answer !== undefined && !Array.isArray(doc.Answer)) throw new DohMalformedError("dns-json Answer is not an array");
  const answers: DohAnswer[] = [];
  for (const record of (doc.Answer ?? []) as unknown[]) {
    if (!isObject(record) || typeof record.name !== "string" || typeof record.type !== "number") {
      throw new DohMalformedError("dns-json Answer entry lacks name or type");
    }
    const recordType = JSON_TYPES[record.type];
    if (recordType === undefined) continue;
    const ttl = typeof record.TTL === "number" ? record.TTL : 0;
    answers.push(checkedAnswer(recordType, record.name, record.data, ttl));
  }
  return { answers, rcode: rcodeName(doc.Status as number) };
}

function checkedAnswer(type: DohAnswer["type"], owner: string, data: unknown, ttl: number): DohAnswer {
  if (typeof data !== "string") throw new DohMalformedError(`${type} record of ${owner} has no text data`);
  const name = normaliseName(owner);
  if (type === "CNAME") {
    const target = normaliseName(data);
    if (!/^[a-z0-9_-]+(\.[a-z0-9_-]+)*$/.test(target)) throw new DohMalformedError(`CNAME ${owner} → "${data}" is not a name`);
    return { type, name, data: target, ttl };
  }
  const address = parseIpValue(data);
  if (!address || address.family !== (type === "A" ? 4 : 6)) {
    throw new DohMalformedError(`${type} record of ${owner} has a bad address "${data}"`);
  }
  return { type, name, data: formatIpValue(address), ttl };
}

const rcodeName = (code: number): string => RCODES[code] ?? `RCODE${code}`;

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);
