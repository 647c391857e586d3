import { randomUUID } from "node:crypto";

/** One operation of the OpenAPI document, with what the security tests need of it. */
export interface Operation {
  method: string;
  /** The templated path, e.g. `/v1/modules/{module_id}`. */
  template: string;
  minRole: string;
  node: boolean;
  deployment: boolean;
  params: { name: string; in: string; schema?: { type?: string; format?: string } }[];
  hasBody: boolean;
}

/** Every operation of the document (`/v1/openapi.json`), in document order. */
export function operationsOf(doc: any): Operation[] {
  const ops: Operation[] = [];
  for (const [template, item] of Object.entries<any>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(item)) {
      if (!["get", "post", "put", "patch", "delete"].includes(method)) continue;
      ops.push({
        method: method.toUpperCase(),
        template,
        minRole: op["x-min-role"],
        node: op["x-node-key"] === true,
        deployment: op["x-deployment"] === true,
        params: op.parameters ?? [],
        hasBody: op.requestBody !== undefined,
      });
    }
  }
  return ops;
}

const absent = randomUUID();

/** The path with each `{param}` filled: a valid but unknown id, or `given[param]` when known. */
export function fill(op: Operation, given: Record<string, string> = {}): string {
  return op.template.replace(/\{([^}]+)\}/g, (_, name: string) => {
    if (given[name]) return given[name]!;
    const p = op.params.find((x) => x.in === "path" && x.name === name);
    if (p?.schema?.type === "integer") return "1";
    if (name === "filename") return "app.log";
    if (p?.schema?.format === "uuid" || name.endsWith("_id") || name === "id") return absent;
    return "x";
  });
}

export const ROLE_RANK: Record<string, number> = { viewer: 1, operator: 2, admin: 3, superadmin: 4 };
