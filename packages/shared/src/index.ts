export { ConfigError, parseEnvironment } from "./config-env.js";
export * from "./errors.js";
export { spkiHash } from "./spki.js";
