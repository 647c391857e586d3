import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { importGraph } from "../../scripts/import-graph.mjs";

const root = join(import.meta.dirname, "../..");
const SRC = "packages/controller/src/";

/**
 * The controller's service areas, lowest first: each may import only those before it
 * (packages/controller/src/services/README.md says why this order). Type-only imports count: a
 * type names what an area depends on as much as a call does.
 */
const AREAS = ["access", "operations", "revisions", "ingest", "route-lists", "deploy"];

/** Folders of the controller that sit below the services: what metrics/ may import. */
const BELOW_SERVICES = ["lib", "db", "bus", "events", "sources"];
/** What no service and no Fastify plugin may import: the transports and the process around them. */
const TRANSPORTS = ["routes", "jobs", "scheduler", "grpc", "rlctl"];
/** Transports that call services only: no file of theirs (tests aside) imports db/, a type included. */
const CALL_SERVICES = ["routes", "jobs", "scheduler"];
/**
 * Files of those folders a service may import all the same: the environment's schema (a leaf:
 * it imports nothing of the controller), and the transfer counters and slots that bound bundle
 * downloads over HTTP and gRPC alike.
 */
const SHARED_WITH_SERVICES = ["config.ts", "grpc/limits.ts"];

/** Where a controller file sits: its service area, its top folder, or "root" (app.ts, controller.ts…). */
function placeOf(file: string): { folder: string; area: string | null } | null {
  if (!file.startsWith(SRC)) return null;
  const parts = file.slice(SRC.length).split("/");
  if (parts.length === 1) return { folder: "root", area: null };
  const folder = parts[0]!;
  return { folder, area: folder === "services" && parts.length > 2 ? parts[1]! : null };
}

/** Every import against the order: `from -> to (rule)`. */
function orderViolations(graph: Map<string, string[]>): string[] {
  const out: string[] = [];
  for (const [from, targets] of graph) {
    const a = placeOf(from);
    if (!a) continue;
    for (const to of targets) {
      const b = placeOf(to);
      if (!b) continue;
      const name = `${from.slice(SRC.length)} -> ${to.slice(SRC.length)}`;
      if (a.area && b.area && a.area !== b.area && AREAS.indexOf(b.area) > AREAS.indexOf(a.area)) {
        out.push(`${name} (${a.area} may not import ${b.area}, which comes after it)`);
      }
      const shared = SHARED_WITH_SERVICES.includes(to.slice(SRC.length));
      if (a.folder === "services" && !shared && (TRANSPORTS.includes(b.folder) || b.folder === "plugins" || b.folder === "root")) {
        out.push(`${name} (a service imports no transport, plugin or process file)`);
      }
      if (a.folder === "metrics" && !BELOW_SERVICES.includes(b.folder) && b.folder !== "metrics") {
        out.push(`${name} (metrics/ imports only ${BELOW_SERVICES.join(", ")})`);
      }
      if (CALL_SERVICES.includes(a.folder) && b.folder === "db" && !from.endsWith(".test.ts")) {
        out.push(`${name} (routes, jobs and the scheduler reach the database through a service)`);
      }
      if (a.folder === "plugins" && (TRANSPORTS.includes(b.folder) || b.folder === "root")) {
        out.push(`${name} (a plugin imports no route, job, scheduler, gRPC or process file)`);
      }
    }
  }
  return out.sort();
}

describe("the controller's areas import in one direction", () => {
  it("no service area imports one after it, metrics/ imports nothing above it, services and plugins no transport, transports no db/", () => {
    const graph = importGraph(root, { types: true });
    expect([...graph.keys()].filter((f) => f.startsWith(`${SRC}services/`)).length).toBeGreaterThan(50);
    expect(orderViolations(graph)).toEqual([]);
  });

  it("the order is the one services/README.md states", async () => {
    const { readFile } = await import("node:fs/promises");
    const readme = await readFile(join(root, SRC, "services/README.md"), "utf8");
    expect(readme).toContain(AREAS.map((a) => `\`${a}\``).join(" → "));
  });

  it("finds an import against the order, a type-only one included", () => {
    const at = (path: string) => `${SRC}${path}`;
    const graph = new Map([
      [at("services/access/audit.ts"), [at("lib/ids.ts")]],
      [at("services/deploy/deploy.ts"), [at("services/access/audit.ts"), at("services/revisions/revision-store.ts")]],
      [at("services/revisions/revisions.ts"), [at("services/deploy/bundles.ts")]],
      [at("services/operations/jobs.ts"), [at("jobs/worker.ts")]],
      [at("scheduler/scheduler.ts"), [at("db/advisory-locks.ts"), at("services/operations/scheduler-lock.ts")]],
      [at("metrics/fleet-reads.ts"), [at("db/fleet-metrics.ts"), at("services/deploy/speakers.ts")]],
      [at("plugins/openapi.ts"), [at("routes/operation-ids.ts"), at("events/asyncapi.ts")]],
    ]);
    expect(orderViolations(graph)).toEqual([
      "metrics/fleet-reads.ts -> services/deploy/speakers.ts (metrics/ imports only lib, db, bus, events, sources)",
      "plugins/openapi.ts -> routes/operation-ids.ts (a plugin imports no route, job, scheduler, gRPC or process file)",
      "scheduler/scheduler.ts -> db/advisory-locks.ts (routes, jobs and the scheduler reach the database through a service)",
      "services/operations/jobs.ts -> jobs/worker.ts (a service imports no transport, plugin or process file)",
      "services/revisions/revisions.ts -> services/deploy/bundles.ts (revisions may not import deploy, which comes after it)",
    ]);
  });
});
