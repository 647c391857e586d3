import { randomUUID } from "node:crypto";
import type { InjectOptions } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestController, type TestController } from "../../helpers/controller.js";
import { createModule, expectStatus, otherTenant } from "./helpers.js";

// Walks the OpenAPI document: every operation on a path with a {parameter} is called with
// tenant B's admin key and tenant A's ids, and must answer 404 (never 403, 200 or 500). New
// routes are covered as they appear in the document; ids of collections this file does not
// create are discovered by listing the collection with A's key.

/** Paths that cannot answer 404 to another tenant, and why. */
const EXCEPTIONS: { path: RegExp; reason: string }[] = [
  { path: /^\/v1\/tenants\/\{id\}$/, reason: "tenant management is cross-tenant by design: superadmin only, so B's admin gets 403 before any lookup" },
  { path: /^\/v1\/runtime-logs\/files\/\{filename\}$/, reason: "runtime-log files belong to the deployment, not to a tenant: there is no file of A to name" },
  { path: /^\/v1\/node\//, reason: "node routes answer node keys only: an admin key is a 403 whatever the id" },
];

const METHODS = ["get", "post", "put", "patch", "delete"] as const;

let t: TestController;
let doc: any;
let b: { id: string; key: string };
const ids: Record<string, string> = {};
const moduleFor: Record<string, string> = {};

beforeAll(async () => {
  t = await startTestController();
  const a = t.rootKey;
  const post = async (url: string, payload: object) => (await expectStatus(t, a, { method: "POST", url, payload }, 201)).json();

  ids.communities = (await post("/v1/communities", { community: "65000:1", title: "A's" })).id;
  ids["doh-profiles"] = (await post("/v1/doh-profiles", { url: "https://dns.example.net/dns-query" })).id;
  const asModule = await createModule(t, a, { name: "a-as", type: "AS_PREFIXES", community_id: ids.communities });
  const domainModule = await createModule(t, a, { name: "a-domains", type: "DOMAINS", doh_profile_id: ids["doh-profiles"] });
  const rangeModule = await createModule(t, a, { name: "a-ranges", type: "IP_RANGES" });
  ids["as-entries"] = (await post(`/v1/modules/${asModule.id}/as-entries`, { asn: 13335 })).id;
  ids["domain-entries"] = (await post(`/v1/modules/${domainModule.id}/domain-entries`, { domain: "a.example" })).id;
  ids["ip-range-entries"] = (await post(`/v1/modules/${rangeModule.id}/ip-range-entries`, { cidr: "10.0.0.0/8" })).id;
  ids["cdn-sources"] = (await post(`/v1/modules/${rangeModule.id}/cdn-sources`, { url: "https://feeds.example.com/a.txt" })).id;
  ids["api-keys"] = (await post("/v1/api-keys", { name: "a's key", role: "viewer" })).id;
  ids.modules = rangeModule.id;
  Object.assign(moduleFor, { "as-entries": asModule.id, "domain-entries": domainModule.id, "ip-range-entries": rangeModule.id });

  b = await otherTenant(t, "tenant-b");
  doc = (await expectStatus(t, "", { method: "GET", url: "/v1/openapi.json" }, 200)).json();
});
afterAll(async () => t?.close());

function resolve(schema: any): any {
  if (schema?.$ref) return resolve(doc.components.schemas[schema.$ref.split("/").pop()]);
  return schema ?? {};
}

/** The smallest value the schema accepts, enough for validation to pass and the lookup to run. */
function sample(input: any): unknown {
  const s = resolve(input);
  if (s.example !== undefined) return s.example;
  if (Array.isArray(s.examples) && s.examples.length) return s.examples[0];
  if (s.const !== undefined) return s.const;
  if (Array.isArray(s.enum)) return s.enum[0];
  if (s.default !== undefined) return s.default;
  const branches = s.anyOf ?? s.oneOf;
  if (branches) return sample(branches.find((x: any) => resolve(x).type !== "null") ?? branches[0]);
  if (s.allOf) return Object.assign({}, ...s.allOf.map(sample));
  const type = Array.isArray(s.type) ? s.type.find((x: string) => x !== "null") : s.type;
  switch (type) {
    case "object":
      return Object.fromEntries((s.required ?? []).map((k: string) => [k, sample(s.properties?.[k])]));
    case "array":
      return s.minItems ? [sample(s.items)] : [];
    case "integer":
    case "number":
      return s.minimum ?? (s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : 1);
    case "boolean":
      return false;
    case "string":
      if (s.format === "uuid") return randomUUID();
      if (s.format === "date-time") return new Date(Date.now() + 3600_000).toISOString();
      if (s.format === "uri") return "https://example.com/";
      return "x".repeat(Math.max(1, s.minLength ?? 1));
    default:
      return {};
  }
}

/** A's id for each {param}: by the collection it follows, else listed with A's key, else made up. */
async function fill(path: string, params: any[]): Promise<string> {
  const parts = path.split("/");
  for (let i = 0; i < parts.length; i++) {
    const m = /^\{(.+)\}$/.exec(parts[i]!);
    if (!m) continue;
    const collection = parts[i - 1]!;
    let value: string | number | undefined = collection === "modules" ? (moduleFor[parts[i + 1] ?? ""] ?? ids.modules) : ids[collection];
    if (value === undefined) {
      const list = await t.call(t.rootKey, { method: "GET", url: parts.slice(0, i).join("/") });
      const first = list.statusCode === 200 ? list.json().items?.[0] : undefined;
      value = first?.[m[1]!] ?? first?.id ?? first?.revision_id;
    }
    if (value === undefined) {
      const schema = resolve(params.find((p) => p.in === "path" && p.name === m[1])?.schema);
      value = schema.type === "integer" ? 1 : randomUUID();
    }
    parts[i] = String(value);
  }
  return parts.join("/");
}

function requestOf(op: any, url: string): InjectOptions {
  const query = (op.parameters ?? []).filter((p: any) => p.in === "query" && p.required);
  const qs = query.map((p: any) => `${p.name}=${encodeURIComponent(String(sample(p.schema)))}`).join("&");
  const out: InjectOptions = { url: qs ? `${url}?${qs}` : url };
  const content = op.requestBody?.content;
  if (content?.["application/json"]) out.payload = sample(content["application/json"].schema) as object;
  else if (content) {
    const type = Object.keys(content)[0]!;
    out.payload = "x\r\n";
    out.headers = { "content-type": type };
  }
  return out;
}

describe("cross-tenant", () => {
  it("cross-tenant - every operation on an id of tenant A answers 404 to tenant B", async () => {
    const failures: string[] = [];
    const covered: string[] = [];
    const calls: { method: string; path: string; url: string; opts: InjectOptions }[] = [];
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      if (!path.includes("{") || EXCEPTIONS.some((e) => e.path.test(path))) continue;
      for (const method of METHODS) {
        const op = item[method];
        if (!op) continue;
        const url = await fill(path, [...(item.parameters ?? []), ...(op.parameters ?? [])]);
        calls.push({ method, path, url, opts: requestOf(op, url) });
      }
    }
    // Deletes last, so a wrongly permitted delete cannot hide a wrongly permitted read.
    calls.sort((x, y) => Number(x.method === "delete") - Number(y.method === "delete"));
    for (const c of calls) {
      const res = await t.call(b.key, { ...c.opts, method: c.method.toUpperCase() as InjectOptions["method"] });
      covered.push(`${c.method.toUpperCase()} ${c.path}`);
      if (res.statusCode !== 404 || res.json().code !== "not_found") {
        failures.push(`${c.method.toUpperCase()} ${c.path} → ${res.statusCode} ${res.body.slice(0, 200)}`);
      }
    }
    expect(failures).toEqual([]);
    // The routes of this issue are all in the walk.
    for (const route of [
      "GET /v1/modules/{module_id}",
      "PATCH /v1/modules/{module_id}",
      "DELETE /v1/modules/{module_id}",
      "POST /v1/modules/{module_id}/as-entries",
      "PATCH /v1/modules/{module_id}/domain-entries/{entry_id}",
      "DELETE /v1/modules/{module_id}/ip-range-entries/{entry_id}",
      "GET /v1/modules/{module_id}/entries.csv",
      "POST /v1/modules/{module_id}/entries.csv",
      "POST /v1/modules/{module_id}/cdn-sources/preview",
      "POST /v1/modules/{module_id}/cdn-sources/{source_id}/preview",
      "PATCH /v1/communities/{id}",
      "DELETE /v1/doh-profiles/{id}",
    ]) {
      expect(covered).toContain(route);
    }
  });

  it("cross-tenant - tenant A's resources are untouched afterwards", async () => {
    for (const url of [
      `/v1/modules/${ids.modules}`,
      `/v1/modules/${ids.modules}/ip-range-entries/${ids["ip-range-entries"]}`,
      `/v1/modules/${ids.modules}/cdn-sources/${ids["cdn-sources"]}`,
      `/v1/modules/${moduleFor["as-entries"]}/as-entries/${ids["as-entries"]}`,
      `/v1/modules/${moduleFor["domain-entries"]}/domain-entries/${ids["domain-entries"]}`,
      `/v1/communities/${ids.communities}`,
      `/v1/doh-profiles/${ids["doh-profiles"]}`,
      `/v1/api-keys/${ids["api-keys"]}`,
    ]) {
      await expectStatus(t, t.rootKey, { method: "GET", url }, 200);
    }
  });

  it("cross-tenant - lists and the catalog show only the caller's tenant", async () => {
    for (const url of ["/v1/modules", "/v1/communities", "/v1/doh-profiles"]) {
      expect((await expectStatus(t, b.key, { method: "GET", url }, 200)).json().items).toEqual([]);
    }
    const catalog = (await expectStatus(t, b.key, { method: "GET", url: "/v1/router-lists/catalog" }, 200)).json();
    expect(catalog).toMatchObject({ modules: [], communities: [], doh_profiles: [] });
  });

  it("cross-tenant - B cannot point its modules at A's community or profiles", async () => {
    await expectStatus(t, b.key, { method: "POST", url: "/v1/modules", payload: { name: "x", type: "AS_PREFIXES", community_id: ids.communities } }, 400);
    await expectStatus(t, b.key, { method: "POST", url: "/v1/modules", payload: { name: "y", type: "DOMAINS", doh_profile_ids: [ids["doh-profiles"]] } }, 400);
  });
});
