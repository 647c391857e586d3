import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { usageError } from "./exit-codes.js";

/** One controller and the key to use there. */
export interface Profile {
  url: string;
  api_key?: string;
}

/** `~/.config/rlctl/config.json` (or under XDG_CONFIG_HOME). */
export interface ConfigFile {
  current?: string;
  profiles: Record<string, Profile>;
}

export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME || join(homedir(), ".config");
  return join(base, "rlctl", "config.json");
}

export async function readConfig(path: string): Promise<ConfigFile> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { profiles: {} };
    throw err;
  }
  try {
    const parsed = JSON.parse(text) as ConfigFile;
    return { ...parsed, profiles: parsed.profiles ?? {} };
  } catch (err) {
    throw usageError(`${path} is not valid JSON: ${(err as Error).message}`);
  }
}

/** Written 0600: it holds API keys. */
export async function writeConfig(path: string, config: ConfigFile): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  await writeFile(path, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  await chmod(path, 0o600);
}

export interface Connection {
  url: string;
  apiKey: string | undefined;
  /** Where the URL came from, for error messages: `--url`, `RL_URL` or `profile NAME`. */
  source: string;
}

/**
 * The controller and key to use: `--url`/`--api-key` first, then `RL_URL`/`RL_API_KEY`, then
 * the profile named by `--profile`, `RL_PROFILE` or the file's `current`.
 */
export async function resolveConnection(flags: { url?: string; apiKey?: string; profile?: string }, env: NodeJS.ProcessEnv = process.env): Promise<Connection> {
  const path = configPath(env);
  const file = await readConfig(path);
  const name = flags.profile ?? env.RL_PROFILE ?? file.current;
  const profile = name ? file.profiles[name] : undefined;
  if (name && !profile && (flags.profile || env.RL_PROFILE)) throw usageError(`no profile named ${name} in ${path} (rlctl config ls)`);
  const url = flags.url ?? env.RL_URL ?? profile?.url;
  if (!url) throw usageError(`no controller URL: pass --url, set RL_URL, or add a profile (rlctl config set NAME --url URL --api-key KEY)`);
  const source = flags.url ? "--url" : env.RL_URL ? "RL_URL" : `profile ${name}`;
  return { url, apiKey: flags.apiKey ?? env.RL_API_KEY ?? profile?.api_key, source };
}
