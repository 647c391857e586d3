import { randomBytes } from "node:crypto";
import { open, rename, unlink } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

/**
 * Writes `data` to `path` so that a reader (or the agent after a crash or power loss) sees the
 * old content or the new, whole: a temporary file beside it, fsync, rename over the target,
 * fsync of the directory so the rename itself is durable.
 */
export async function writeFileAtomic(path: string, data: string | Uint8Array, mode: number): Promise<void> {
  const dir = dirname(path);
  const temporary = join(dir, `.${basename(path)}.${randomBytes(6).toString("hex")}.tmp`);
  const file = await open(temporary, "wx", mode);
  try {
    await file.writeFile(data);
    // The mode given to open is reduced by the umask; state files must be exactly 0600.
    await file.chmod(mode);
    await file.sync();
  } catch (error) {
    await file.close();
    await unlink(temporary).catch(() => undefined);
    throw error;
  }
  await file.close();
  try {
    await rename(temporary, path);
  } catch (error) {
    await unlink(temporary).catch(() => undefined);
    throw error;
  }
  const directory = await open(dir, "r");
  try {
    await directory.sync();
  } finally {
    await directory.close();
  }
}
