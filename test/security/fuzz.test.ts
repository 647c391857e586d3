import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestController, type TestController } from "../helpers/controller.js";
import { type Operation, operationsOf } from "./operations.js";

// Random bodies, query strings and path values for every operation of the OpenAPI document,
// sent with the deployment's superadmin key (past every role check): whatever arrives, the
// answer is never a 5xx. The one exception is documented: no local BIRD is configured here,
// so `/v1/bird/*` answers 503 `bird_unavailable`.

let dir: string;
let t: TestController;
let doc: any;
let ops: Operation[];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "rlc-fuzz-"));
  await writeFile(join(dir, "app.log"), "x\n");
  t = await startTestController({ env: { APP_RUNTIME_LOGS_DIR: dir, GRPC_PORT: "0" } });
  doc = (await t.call(null, { method: "GET", url: "/v1/openapi.json" })).json();
  ops = operationsOf(doc);
});
afterAll(async () => {
  await t?.close();
  await rm(dir, { recursive: true, force: true });
});

const deref = (s: any): any => (s?.$ref ? deref(doc.components.schemas[s.$ref.split("/").pop()]) : s);

/** Values shaped by the schema often enough to get past validation, random JSON the rest of the time. */
function shapedValue(schema: any, depth = 0): fc.Arbitrary<unknown> {
  const s = deref(schema) ?? {};
  const random = fc.jsonValue({ maxDepth: 2 });
  if (depth > 3) return random;
  const alts = s.anyOf ?? s.oneOf;
  if (alts) return fc.oneof(...alts.map((a: any) => shapedValue(a, depth + 1)), random);
  if (s.enum) return fc.oneof(fc.constantFrom(...s.enum), random);
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  switch (type) {
    case "object": {
      const props = Object.entries<any>(s.properties ?? {});
      if (!props.length) return fc.oneof(fc.dictionary(fc.string({ maxLength: 12 }), random, { maxKeys: 4 }), random);
      const shaped = fc.record(Object.fromEntries(props.map(([k, v]) => [k, shapedValue(v, depth + 1)])), { requiredKeys: [] });
      return fc.oneof({ weight: 4, arbitrary: shaped }, { weight: 1, arbitrary: random });
    }
    case "array":
      return fc.oneof(fc.array(shapedValue(s.items, depth + 1), { maxLength: 4 }), random);
    case "integer":
      return fc.oneof(fc.integer(), fc.constantFrom(0, -1, 1, 2 ** 31, 2 ** 53, Number.MAX_SAFE_INTEGER + 2), random);
    case "number":
      return fc.oneof(fc.double(), random);
    case "boolean":
      return fc.oneof(fc.boolean(), random);
    case "string":
      return fc.oneof(
        fc.string({ maxLength: 40 }),
        fc.string({ unit: "binary", maxLength: 20 }),
        fc.constantFrom("", " ", "0.0.0.0/0", "::/0", "10.0.0.0/8", "example.com", "xn--", "AS65000", "\u0000", "../../etc/passwd", "a".repeat(300)),
        fc.uuid(),
        random,
      );
    default:
      return random;
  }
}

const queryValue = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.constantFrom("true", "false", "0", "-1", "501", "999999999999999999999", "null", "", "%", "a,b"),
  fc.integer().map(String),
);

function queryOf(op: Operation): fc.Arbitrary<string> {
  const names = op.params.filter((p) => p.in === "query").map((p) => p.name);
  const pairs = fc.array(fc.tuple(fc.oneof(fc.constantFrom(...(names.length ? names : ["x"])), fc.string({ maxLength: 8 })), queryValue), { maxLength: 4 });
  // `wait=true` makes a refresh wait for its job; random bodies must not make the fuzz wait.
  return pairs.map((ps) =>
    ps
      .filter(([k]) => k !== "wait")
      .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`)
      .join("&"),
  );
}

function pathOf(op: Operation): fc.Arbitrary<string> {
  const names = [...op.template.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
  const value = fc.oneof(
    fc.uuid(),
    fc.integer().map(String),
    fc.string({ minLength: 1, maxLength: 30 }),
    fc.constantFrom("app.log", "..", "%2e%2e", "0", "-1", "99999999999999"),
  );
  return fc.tuple(...names.map(() => value)).map((vals) => {
    let i = 0;
    return op.template.replace(/\{[^}]+\}/g, () => encodeURIComponent(vals[i++]!));
  });
}

function bodyOf(op: Operation): fc.Arbitrary<{ payload?: string; type?: string }> {
  if (!op.hasBody) return fc.constant({});
  const content = doc.paths[op.template][op.method.toLowerCase()].requestBody.content as Record<string, { schema: unknown }>;
  const [type, media] = Object.entries(content)[0]!;
  if (!type.includes("json")) return fc.string({ maxLength: 200 }).map((payload) => ({ payload, type }));
  return shapedValue(media.schema).map((v) => ({ payload: JSON.stringify(v ?? null), type: "application/json" }));
}

describe("schema fuzz of every operation with the superadmin key", () => {
  it("no answer is 5xx", async () => {
    const failures: string[] = [];
    let sent = 0;
    for (const op of ops) {
      if (op.minRole === "public" && op.template.endsWith("/enroll")) continue; // a token, not a key: covered by the node tests
      await fc.assert(
        fc.asyncProperty(pathOf(op), queryOf(op), bodyOf(op), async (path, query, body) => {
          const url = query ? `${path}?${query}` : path;
          const res = await t.call(t.rootKey, {
            method: op.method as "GET",
            url,
            ...(body.payload !== undefined ? { payload: body.payload, headers: { "content-type": body.type! } } : {}),
          });
          sent++;
          const birdAbsent = res.statusCode === 503 && op.template.startsWith("/v1/bird/") && res.json().code === "bird_unavailable";
          if (res.statusCode >= 500 && !birdAbsent)
            failures.push(`${op.method} ${url} ${body.payload?.slice(0, 200) ?? ""} → ${res.statusCode} ${res.body.slice(0, 200)}`);
          return true;
        }),
        { numRuns: 8, seed: Number(process.env.FUZZ_SEED ?? 20261124) },
      );
    }
    expect(sent).toBeGreaterThan(ops.length * 7);
    expect(failures.slice(0, 30), `${failures.length} answers ≥ 500`).toEqual([]);
  }, 60_000);
});
