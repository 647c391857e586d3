import { readFileSync } from "node:fs";
import { CONFIG_VARIABLES, ConfigError } from "./config.js";

/** Where the Debian package puts it; `--config` names another. */
export const DEFAULT_CONFIG_FILE = "/etc/rl-agent/agent.env";

/**
 * Parses an env file as systemd's EnvironmentFile= reads it (so one file serves both):
 * `NAME=value` lines, `#` or `;` comment lines, an optional `export `, and single or double
 * quotes around the value. A name the agent does not read is refused: it is a typo.
 */
export function parseConfigFile(text: string, file: string): Record<string, string> {
  const values: Record<string, string> = {};
  const errors: string[] = [];
  for (const [i, raw] of text.split(/\r?\n/).entries()) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#") || line.startsWith(";")) continue;
    const m = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line);
    if (!m) {
      errors.push(`  ${file}:${i + 1}: not NAME=value`);
      continue;
    }
    const [, name = "", rawValue = ""] = m;
    if (!CONFIG_VARIABLES.includes(name)) {
      errors.push(`  ${file}:${i + 1}: ${name} is not a variable rl-agent reads`);
      continue;
    }
    const quoted = /^(["'])(.*)\1$/.exec(rawValue);
    values[name] = quoted ? (quoted[2] ?? "") : rawValue;
  }
  if (errors.length > 0) throw new ConfigError(`invalid configuration file:\n${errors.join("\n")}`);
  return values;
}

/**
 * The environment over the config file: a variable set in the environment wins. The default
 * file may be absent (the agent then runs from the environment alone); a file named with
 * `--config` must exist.
 */
export function environmentWithConfigFile(env: Record<string, string | undefined>, file: string | undefined): Record<string, string | undefined> {
  const path = file ?? DEFAULT_CONFIG_FILE;
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (file === undefined && code === "ENOENT") return env;
    throw new ConfigError(`cannot read the configuration file ${path}: ${code ?? (error as Error).message}`);
  }
  const fromFile = parseConfigFile(text, path);
  const merged: Record<string, string | undefined> = { ...fromFile };
  for (const [name, value] of Object.entries(env)) if (value !== undefined) merged[name] = value;
  return merged;
}
