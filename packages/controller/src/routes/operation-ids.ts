/**
 * The `operationId` of every operation of the OpenAPI document, keyed by "METHOD /path" as the
 * document writes the path. Generated clients (packages/client, rlctl, the web console) name
 * their calls after these, so an id never changes once published: rename a route and keep its
 * id, add a route and give it a new one. A test fails when an operation has no id here, when
 * two share one, or when an entry names no route.
 */
export const operationIds: Readonly<Record<string, string>> = {
  // Public
  "GET /metrics": "getMetrics",
  "GET /v1/health": "getHealth",
  "GET /health": "getHealthRoot",
  "GET /v1/version": "getVersion",
  "GET /version": "getVersionRoot",
  "GET /v1/ready": "getReadiness",
  "GET /v1/auth/session": "getAuthSession",

  // Access
  "GET /v1/api-keys": "listApiKeys",
  "POST /v1/api-keys": "createApiKey",
  "GET /v1/api-keys/{id}": "getApiKey",
  "PATCH /v1/api-keys/{id}": "updateApiKey",
  "DELETE /v1/api-keys/{id}": "revokeApiKey",
  "POST /v1/api-keys/{id}/rotate": "rotateApiKey",
  "GET /v1/tenants": "listTenants",
  "POST /v1/tenants": "createTenant",
  "GET /v1/tenants/{id}": "getTenant",
  "GET /v1/settings": "getSettings",
  "PATCH /v1/settings": "updateSettings",
  "GET /v1/audit": "listAuditEvents",
  "GET /v1/metrics": "getFleetMetrics",
  "POST /v1/nats/monitoring-credentials": "issueNatsMonitoringCredentials",

  // Jobs
  "GET /v1/jobs": "listJobs",
  "GET /v1/jobs/{job_id}": "getJob",
  "POST /v1/jobs/{job_id}/cancel": "cancelJob",

  // Route lists
  "GET /v1/modules": "listModules",
  "POST /v1/modules": "createModule",
  "GET /v1/modules/{module_id}": "getModule",
  "PATCH /v1/modules/{module_id}": "updateModule",
  "DELETE /v1/modules/{module_id}": "deleteModule",
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
  "GET /v1/modules/{module_id}/entries.csv": "exportEntriesCsv",
  "POST /v1/modules/{module_id}/entries.csv": "importEntriesCsv",
  "GET /v1/modules/{module_id}/cdn-sources": "listCdnSources",
  "POST /v1/modules/{module_id}/cdn-sources": "createCdnSource",
  "POST /v1/modules/{module_id}/cdn-sources/preview": "previewCdnFeed",
  "GET /v1/modules/{module_id}/cdn-sources/{source_id}": "getCdnSource",
  "PATCH /v1/modules/{module_id}/cdn-sources/{source_id}": "updateCdnSource",
  "DELETE /v1/modules/{module_id}/cdn-sources/{source_id}": "deleteCdnSource",
  "POST /v1/modules/{module_id}/cdn-sources/{source_id}/preview": "previewCdnSource",
  "GET /v1/communities": "listCommunities",
  "POST /v1/communities": "createCommunity",
  "GET /v1/communities/{id}": "getCommunity",
  "PATCH /v1/communities/{id}": "updateCommunity",
  "DELETE /v1/communities/{id}": "deleteCommunity",
  "GET /v1/doh-profiles": "listDohProfiles",
  "POST /v1/doh-profiles": "createDohProfile",
  "GET /v1/doh-profiles/{id}": "getDohProfile",
  "PATCH /v1/doh-profiles/{id}": "updateDohProfile",
  "DELETE /v1/doh-profiles/{id}": "deleteDohProfile",
  "GET /v1/router-lists/catalog": "getCatalog",

  // Ingest, revisions, lookup
  "POST /v1/modules/{module_id}/refresh": "refreshModule",
  "POST /v1/modules/refresh": "refreshAllModules",
  "GET /v1/revisions": "listRevisions",
  "GET /v1/revisions/prune/estimate": "estimateRevisionPrune",
  "POST /v1/revisions/prune": "pruneRevisions",
  "GET /v1/revisions/{revision_id}": "getRevision",
  "GET /v1/revisions/{revision_id}/prefixes": "listRevisionPrefixes",
  "GET /v1/revisions/{revision_id}/preview": "previewRevision",
  "GET /v1/revisions/{revision_a}/diff/{revision_b}": "diffRevisions",
  "POST /v1/revisions/{revision_id}/rollback": "rollbackRevision",
  "GET /v1/lookup": "lookup",

  // Deploy
  "GET /v1/speakers": "listSpeakers",
  "POST /v1/speakers": "createSpeaker",
  "GET /v1/speakers/{speaker_id}": "getSpeaker",
  "PATCH /v1/speakers/{speaker_id}": "updateSpeaker",
  "DELETE /v1/speakers/{speaker_id}": "deleteSpeaker",
  "POST /v1/speakers/{speaker_id}/enrollment-token": "issueEnrollmentToken",
  "POST /v1/speakers/{id}/apply": "applyToSpeaker",
  "POST /v1/apply": "applyRevision",
  "GET /v1/peers": "listPeers",
  "POST /v1/peers": "createPeer",
  "GET /v1/peers/{id}": "getPeer",
  "PATCH /v1/peers/{id}": "updatePeer",
  "DELETE /v1/peers/{id}": "deletePeer",
  "GET /v1/bird/status": "getLocalBirdStatus",
  "POST /v1/bird/reload": "reloadLocalBird",

  // Agents (node keys)
  "POST /v1/nodes/enroll": "enrollNode",
  "GET /v1/nodes/signing-keys": "listSigningKeys",
  "POST /v1/nodes/signing-keys/rotate": "rotateSigningKey",
  "GET /v1/speakers/{speaker_id}/revisions/latest": "getSpeakerLatestRevision",
  "GET /v1/speakers/{speaker_id}/bundle/{revision_id}": "getSpeakerBundle",
  "POST /v1/speakers/{speaker_id}/status": "reportSpeakerStatus",

  // Operations
  "GET /v1/runtime-logs/files": "listRuntimeLogFiles",
  "GET /v1/runtime-logs/files/{filename}": "tailRuntimeLogFile",
  "DELETE /v1/runtime-logs/files/{filename}": "cleanRuntimeLogFile",
  "GET /v1/runtime-logs/cleanup-audit": "listRuntimeLogCleanups",
  "GET /v1/runtime-logs/auto-estimate": "estimateRuntimeLogAutoCleanup",
  "POST /v1/runtime-logs/auto-run": "runRuntimeLogAutoCleanup",
  "GET /v1/maintenance/policies": "listMaintenancePolicies",
  "POST /v1/maintenance/policies": "createMaintenancePolicy",
  "GET /v1/maintenance/policies/{policy_id}": "getMaintenancePolicy",
  "PATCH /v1/maintenance/policies/{policy_id}": "updateMaintenancePolicy",
  "DELETE /v1/maintenance/policies/{policy_id}": "deleteMaintenancePolicy",
  "POST /v1/maintenance/policies/{policy_id}/run": "runMaintenancePolicy",
  "POST /v1/maintenance/policies/{policy_id}/dry-run": "dryRunMaintenancePolicy",
  "GET /v1/maintenance/db": "getDatabaseStats",
  "POST /v1/maintenance/db/analyze": "analyzeDatabase",
};

/** "GET /v1/modules/{module_id}" for a Fastify route (`/v1/modules/:module_id`) and one method. */
export function operationKey(method: string, fastifyUrl: string): string {
  return `${method.toUpperCase()} ${fastifyUrl.replace(/:([A-Za-z0-9_]+)/g, "{$1}")}`;
}
