import { mkdir, open, rm } from "node:fs/promises";
import { join } from "node:path";
import type { BootstrapResult } from "./tenants.js";

/**
 * What the first start says about the superadmin key of tenant `default`. On a terminal the
 * key is printed (shown once, to the person who started the controller). Anywhere else stdout
 * is a service log that others read and keep, so the key goes to `<dataDir>/bootstrap-key`
 * (mode 0600) and the log says only where it is.
 */
export async function announceBootstrapKey(opts: {
  bootstrap: BootstrapResult;
  /** BOOTSTRAP_API_KEY was given: the operator already holds the key, only its prefix is shown. */
  fromEnv: boolean;
  isTTY: boolean;
  dataDir: string;
  /** Where the API listens, for the example command. */
  shown: string;
  write: (text: string) => void;
}): Promise<{ file: string | null }> {
  const { bootstrap } = opts;
  if (!bootstrap.created) return { file: null };
  const tryIt = `  curl -H "Authorization: Bearer <key>" ${opts.shown}/v1/auth/session\n`;
  if (opts.fromEnv) {
    opts.write(`created tenant "default" with a superadmin key (BOOTSTRAP_API_KEY):\n\n  ${bootstrap.key_prefix} (from BOOTSTRAP_API_KEY)\n\nTry:\n${tryIt}`);
    return { file: null };
  }
  if (opts.isTTY) {
    opts.write(`created tenant "default" with a superadmin key:\n\n  ${bootstrap.secret}\n\nIt is shown once; keep it safe. Try:\n${tryIt}`);
    return { file: null };
  }
  const file = join(opts.dataDir, "bootstrap-key");
  try {
    await mkdir(opts.dataDir, { recursive: true, mode: 0o700 });
    // A file left by an earlier database holds a key that no longer exists; "wx" then makes the
    // new one with mode 0600 whatever the old file's mode was.
    await rm(file, { force: true });
    const fh = await open(file, "wx", 0o600);
    try {
      await fh.writeFile(`${bootstrap.secret}\n`);
    } finally {
      await fh.close();
    }
  } catch (err) {
    // The key is in the database now and shown nowhere else: say how to get another one.
    throw new Error(
      `could not write the first superadmin key to ${file} (${(err as Error).message}); make another with ` +
        "`npm run controller -- key create --tenant default --role superadmin`",
      { cause: err },
    );
  }
  opts.write(
    `created tenant "default" with a superadmin key (prefix ${bootstrap.key_prefix}); stdout is not a terminal, so the key is not printed: ` +
      `it is in ${file} (mode 0600). Read it, keep it safe and delete the file.\n`,
  );
  return { file };
}
