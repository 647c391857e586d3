export { ConfigError, parseEnvironment } from "./config-env.js";
export * from "./errors.js";
export { isSelfSigned, publicRootHashes, spkiHash } from "./spki.js";
