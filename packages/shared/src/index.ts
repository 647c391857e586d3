export * from "./errors.js";
export { spkiHash } from "./spki.js";
