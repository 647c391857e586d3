export * from "./api-keys.js";
export * from "./audit.js";
export * from "./common.js";
export * from "./health.js";
export * from "./settings.js";
export * from "./tenants.js";
export * from "./jobs.js";
