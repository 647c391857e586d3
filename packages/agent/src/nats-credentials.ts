import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { writeFileAtomic } from "@rlc/shared/bird";

/** The NATS user enrollment handed out (user JWT + nkey seed); in RL_STATE_DIR beside node.json. */
export const NATS_CREDS_FILE = "nats.creds";

/** Kept 0600: the seed proves the agent's identity to NATS. */
export async function writeNatsCredentials(stateDir: string, creds: string): Promise<void> {
  await writeFileAtomic(join(stateDir, NATS_CREDS_FILE), creds, 0o600);
}

/** RL_NATS_CREDS when set (it must exist), else the enrolled file, else null (an unauthenticated NATS). */
export async function readNatsCredentials(stateDir: string, override: string | undefined): Promise<string | null> {
  if (override) return readFile(override, "utf8");
  try {
    return await readFile(join(stateDir, NATS_CREDS_FILE), "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
}
