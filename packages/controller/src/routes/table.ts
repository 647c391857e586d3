import type { FastifyInstance, RouteOptions } from "fastify";
import type { AppDeps } from "../app-deps.js";
import publicRoutes from "./public.js";
import type { RoutePlugin } from "./route-file.js";
import apiKeyRoutes from "./v1/api-keys.js";
import auditRoutes from "./v1/audit.js";
import birdRoutes from "./v1/bird.js";
import catalogRoutes from "./v1/catalog.js";
import cdnSourceRoutes from "./v1/cdn-sources.js";
import communityRoutes from "./v1/communities.js";
import csvRoutes from "./v1/csv.js";
import dohProfileRoutes from "./v1/doh-profiles.js";
import entryRoutes from "./v1/entries.js";
import jobRoutes from "./v1/jobs.js";
import lookupRoutes from "./v1/lookup.js";
import maintenanceRoutes from "./v1/maintenance.js";
import metricsRoutes from "./v1/metrics.js";
import moduleRoutes from "./v1/modules.js";
import natsRoutes from "./v1/nats.js";
import nodeRoutes from "./v1/nodes.js";
import peerRoutes from "./v1/peers.js";
import refreshRoutes from "./v1/refresh.js";
import revisionRoutes from "./v1/revisions.js";
import runtimeLogRoutes from "./v1/runtime-logs.js";
import settingsRoutes from "./v1/settings.js";
import speakerRoutes from "./v1/speakers.js";
import tenantRoutes from "./v1/tenants.js";

/** One file of routes and the `operationId` of each operation it registers. */
export interface RouteFile {
  routes: RoutePlugin;
  /**
   * Keyed by "METHOD /path" as the OpenAPI document writes the path (`{module_id}`, not
   * `:module_id`). Generated clients (packages/client, rlctl, the web console) name their calls
   * after these, so an id never changes once published: move or rename a route and keep its id.
   */
  operationIds: Readonly<Record<string, string>>;
}

/**
 * Every route of the API, registered by `app.ts` in this order (the order of the OpenAPI
 * document's paths). A route its file registers without an id here stops the controller at
 * start-up; an id here that names no route fails `test/api/operation-ids.test.ts`.
 */
export const routeTable: readonly RouteFile[] = [
  {
    routes: publicRoutes,
    operationIds: {
      // Served by plugins/metrics.ts (or the METRICS_PORT listener), described here with the probes.
      "GET /metrics": "getMetrics",
      "GET /v1/health": "getHealth",
      "GET /health": "getHealthRoot",
      "GET /v1/version": "getVersion",
      "GET /version": "getVersionRoot",
      "GET /v1/ready": "getReadiness",
    },
  },
  {
    routes: apiKeyRoutes,
    operationIds: {
      "GET /v1/auth/session": "getAuthSession",
      "GET /v1/api-keys": "listApiKeys",
      "POST /v1/api-keys": "createApiKey",
      "GET /v1/api-keys/{id}": "getApiKey",
      "PATCH /v1/api-keys/{id}": "updateApiKey",
      "DELETE /v1/api-keys/{id}": "revokeApiKey",
      "POST /v1/api-keys/{id}/rotate": "rotateApiKey",
    },
  },
  {
    routes: tenantRoutes,
    operationIds: { "GET /v1/tenants": "listTenants", "POST /v1/tenants": "createTenant", "GET /v1/tenants/{id}": "getTenant" },
  },
  { routes: settingsRoutes, operationIds: { "GET /v1/settings": "getSettings", "PATCH /v1/settings": "updateSettings" } },
  { routes: auditRoutes, operationIds: { "GET /v1/audit": "listAuditEvents" } },
  { routes: metricsRoutes, operationIds: { "GET /v1/metrics": "getFleetMetrics" } },
  {
    routes: jobRoutes,
    operationIds: { "GET /v1/jobs": "listJobs", "GET /v1/jobs/{job_id}": "getJob", "POST /v1/jobs/{job_id}/cancel": "cancelJob" },
  },
  {
    routes: runtimeLogRoutes,
    operationIds: {
      "GET /v1/runtime-logs/files": "listRuntimeLogFiles",
      "GET /v1/runtime-logs/files/{filename}": "tailRuntimeLogFile",
      "DELETE /v1/runtime-logs/files/{filename}": "cleanRuntimeLogFile",
      "GET /v1/runtime-logs/cleanup-audit": "listRuntimeLogCleanups",
      "GET /v1/runtime-logs/auto-estimate": "estimateRuntimeLogAutoCleanup",
      "POST /v1/runtime-logs/auto-run": "runRuntimeLogAutoCleanup",
    },
  },
  {
    routes: moduleRoutes,
    operationIds: {
      "GET /v1/modules": "listModules",
      "POST /v1/modules": "createModule",
      "GET /v1/modules/{module_id}": "getModule",
      "PATCH /v1/modules/{module_id}": "updateModule",
      "DELETE /v1/modules/{module_id}": "deleteModule",
    },
  },
  {
    routes: entryRoutes,
    operationIds: {
      "GET /v1/modules/{module_id}/as-entries": "listAsEntries",
      "POST /v1/modules/{module_id}/as-entries": "createAsEntry",
      "GET /v1/modules/{module_id}/as-entries/{entry_id}": "getAsEntry",
      "PATCH /v1/modules/{module_id}/as-entries/{entry_id}": "updateAsEntry",
      "DELETE /v1/modules/{module_id}/as-entries/{entry_id}": "deleteAsEntry",
      "GET /v1/modules/{module_id}/domain-entries": "listDomainEntries",
      "POST /v1/modules/{module_id}/domain-entries": "createDomainEntry",
      "GET /v1/modules/{module_id}/domain-entries/{entry_id}": "getDomainEntry",
      "PATCH /v1/modules/{module_id}/domain-entries/{entry_id}": "updateDomainEntry",
      "DELETE /v1/modules/{module_id}/domain-entries/{entry_id}": "deleteDomainEntry",
      "GET /v1/modules/{module_id}/ip-range-entries": "listIpRangeEntries",
      "POST /v1/modules/{module_id}/ip-range-entries": "createIpRangeEntry",
      "GET /v1/modules/{module_id}/ip-range-entries/{entry_id}": "getIpRangeEntry",
      "PATCH /v1/modules/{module_id}/ip-range-entries/{entry_id}": "updateIpRangeEntry",
      "DELETE /v1/modules/{module_id}/ip-range-entries/{entry_id}": "deleteIpRangeEntry",
      "GET /v1/modules/{module_id}/country-entries": "listCountryEntries",
      "POST /v1/modules/{module_id}/country-entries": "createCountryEntry",
      "GET /v1/modules/{module_id}/country-entries/{entry_id}": "getCountryEntry",
      "PATCH /v1/modules/{module_id}/country-entries/{entry_id}": "updateCountryEntry",
      "DELETE /v1/modules/{module_id}/country-entries/{entry_id}": "deleteCountryEntry",
    },
  },
  {
    routes: csvRoutes,
    operationIds: { "GET /v1/modules/{module_id}/entries.csv": "exportEntriesCsv", "POST /v1/modules/{module_id}/entries.csv": "importEntriesCsv" },
  },
  {
    routes: cdnSourceRoutes,
    operationIds: {
      "GET /v1/modules/{module_id}/cdn-sources": "listCdnSources",
      "POST /v1/modules/{module_id}/cdn-sources": "createCdnSource",
      "POST /v1/modules/{module_id}/cdn-sources/preview": "previewCdnFeed",
      "GET /v1/modules/{module_id}/cdn-sources/{source_id}": "getCdnSource",
      "PATCH /v1/modules/{module_id}/cdn-sources/{source_id}": "updateCdnSource",
      "DELETE /v1/modules/{module_id}/cdn-sources/{source_id}": "deleteCdnSource",
      "POST /v1/modules/{module_id}/cdn-sources/{source_id}/preview": "previewCdnSource",
    },
  },
  {
    routes: communityRoutes,
    operationIds: {
      "GET /v1/communities": "listCommunities",
      "POST /v1/communities": "createCommunity",
      "GET /v1/communities/{id}": "getCommunity",
      "PATCH /v1/communities/{id}": "updateCommunity",
      "DELETE /v1/communities/{id}": "deleteCommunity",
    },
  },
  {
    routes: dohProfileRoutes,
    operationIds: {
      "GET /v1/doh-profiles": "listDohProfiles",
      "POST /v1/doh-profiles": "createDohProfile",
      "GET /v1/doh-profiles/{id}": "getDohProfile",
      "PATCH /v1/doh-profiles/{id}": "updateDohProfile",
      "DELETE /v1/doh-profiles/{id}": "deleteDohProfile",
    },
  },
  { routes: catalogRoutes, operationIds: { "GET /v1/router-lists/catalog": "getCatalog" } },
  {
    routes: revisionRoutes,
    operationIds: {
      "GET /v1/revisions": "listRevisions",
      "GET /v1/revisions/prune/estimate": "estimateRevisionPrune",
      "POST /v1/revisions/prune": "pruneRevisions",
      "GET /v1/revisions/{revision_id}": "getRevision",
      "GET /v1/revisions/{revision_id}/prefixes": "listRevisionPrefixes",
      "GET /v1/revisions/{revision_id}/preview": "previewRevision",
      "GET /v1/revisions/{revision_a}/diff/{revision_b}": "diffRevisions",
      "POST /v1/revisions/{revision_id}/rollback": "rollbackRevision",
    },
  },
  {
    routes: refreshRoutes,
    operationIds: { "POST /v1/modules/{module_id}/refresh": "refreshModule", "POST /v1/modules/refresh": "refreshAllModules" },
  },
  { routes: lookupRoutes, operationIds: { "GET /v1/lookup": "lookup" } },
  {
    routes: speakerRoutes,
    operationIds: {
      "GET /v1/speakers": "listSpeakers",
      "POST /v1/speakers": "createSpeaker",
      "GET /v1/speakers/{speaker_id}": "getSpeaker",
      "PATCH /v1/speakers/{speaker_id}": "updateSpeaker",
      "DELETE /v1/speakers/{speaker_id}": "deleteSpeaker",
      "POST /v1/speakers/{speaker_id}/enrollment-token": "issueEnrollmentToken",
      "POST /v1/speakers/{id}/apply": "applyToSpeaker",
      "GET /v1/speakers/{speaker_id}/sessions/history": "listSpeakerSessionHistory",
    },
  },
  { routes: natsRoutes, operationIds: { "POST /v1/nats/monitoring-credentials": "issueNatsMonitoringCredentials" } },
  {
    routes: peerRoutes,
    operationIds: {
      "GET /v1/peers": "listPeers",
      "POST /v1/peers": "createPeer",
      "GET /v1/peers/{id}": "getPeer",
      "PATCH /v1/peers/{id}": "updatePeer",
      "DELETE /v1/peers/{id}": "deletePeer",
    },
  },
  {
    routes: nodeRoutes,
    operationIds: {
      "POST /v1/apply": "applyRevision",
      "POST /v1/nodes/enroll": "enrollNode",
      "GET /v1/nodes/signing-keys": "listSigningKeys",
      "POST /v1/nodes/signing-keys/rotate": "rotateSigningKey",
      "GET /v1/speakers/{speaker_id}/revisions/latest": "getSpeakerLatestRevision",
      "GET /v1/speakers/{speaker_id}/bundle/{revision_id}": "getSpeakerBundle",
      "POST /v1/speakers/{speaker_id}/status": "reportSpeakerStatus",
    },
  },
  {
    routes: maintenanceRoutes,
    operationIds: {
      "GET /v1/maintenance/policies": "listMaintenancePolicies",
      "POST /v1/maintenance/policies": "createMaintenancePolicy",
      "GET /v1/maintenance/policies/{policy_id}": "getMaintenancePolicy",
      "PATCH /v1/maintenance/policies/{policy_id}": "updateMaintenancePolicy",
      "DELETE /v1/maintenance/policies/{policy_id}": "deleteMaintenancePolicy",
      "POST /v1/maintenance/policies/{policy_id}/run": "runMaintenancePolicy",
      "POST /v1/maintenance/policies/{policy_id}/dry-run": "dryRunMaintenancePolicy",
      "GET /v1/maintenance/db": "getDatabaseStats",
      "POST /v1/maintenance/db/analyze": "analyzeDatabase",
    },
  },
  { routes: birdRoutes, operationIds: { "POST /v1/bird/reload": "reloadLocalBird", "GET /v1/bird/status": "getLocalBirdStatus" } },
];

/** Every operation's id, from the table: what the OpenAPI document writes. */
export const operationIds: Readonly<Record<string, string>> = Object.assign({}, ...routeTable.map((file) => file.operationIds));

/** "GET /v1/modules/{module_id}" for a Fastify route (`/v1/modules/:module_id`) and one method. */
export function operationKey(method: string, fastifyUrl: string): string {
  return `${method.toUpperCase()} ${fastifyUrl.replace(/:([A-Za-z0-9_]+)/g, "{$1}")}`;
}

/** A route its file registers without an `operationId` in its row stops the start: clients are generated from the ids. */
function requireOperationId(file: RouteFile, route: RouteOptions) {
  if ((route.schema as { hide?: boolean } | undefined)?.hide) return;
  for (const method of [route.method].flat()) {
    if (method === "HEAD") continue;
    const key = operationKey(method, route.url);
    if (!file.operationIds[key]) throw new Error(`${key} has no operationId in routes/table.ts`);
  }
}

/** Registers every route file of the table, in its order, each checked against its row's ids. */
export async function registerRoutes(app: FastifyInstance, deps: AppDeps, table: readonly RouteFile[] = routeTable) {
  for (const file of table) {
    await app.register(async (scope) => {
      scope.addHook("onRoute", (route) => requireOperationId(file, route));
      await scope.register(file.routes, { deps });
    });
  }
}
