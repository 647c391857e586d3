#!/usr/bin/env node
import { parseArgs } from "node:util";
import { Role, TenantName } from "@rlc/shared/schemas";

const usage = `Usage: npm run controller -- <command>      (installed: rl-controller <command>)

Commands:
  migrate                        apply the database migrations
  tenant create NAME             create a tenant and its first admin key
  key create --tenant NAME --role viewer|operator|admin|superadmin [--name NAME]
                                 create an API key in a tenant
  nats init DIR [--listen HOST:PORT]
                                 write a NATS operator (with the signing key that makes one
                                 account per tenant), the controller's account and credentials
                                 and a server config into DIR (needs no database)
  backup FILE                    write the embedded database (APP_DATA_DIR) to FILE; the data key
                                 (APP_DATA_DIR/secret.key or APP_SECRET_KEY_FILE) is not in it:
                                 keep it beside the backup. PostgreSQL: pg_dump (docs/operate.md)
  restore FILE                   restore FILE as the embedded database of an empty APP_DATA_DIR
  help, --help, -h               print this text

Each command prints one JSON object on stdout. The database commands use DATABASE_URL, or the
embedded database under APP_DATA_DIR (stop a controller that runs on the same embedded database
first). The operator CLI for a running controller is rlctl (npx rlctl --help).

Exit codes: 0 done, 1 failed (the error as JSON on stderr), 2 misused (a message on stderr).`;

/** A command line that names no command, or names one wrongly: exit 2, nothing touched. */
class UsageError extends Error {
  override name = "UsageError";
}

/** What the command line asks for, decided before any database or file is touched. */
type Command =
  | { kind: "help" }
  | { kind: "migrate" }
  | { kind: "tenant-create"; name: string }
  | { kind: "key-create"; tenant: string; role: ReturnType<typeof Role.parse>; name: string | undefined }
  | { kind: "nats-init"; dir: string; listen: string | undefined }
  | { kind: "backup"; file: string }
  | { kind: "restore"; file: string };

function parseCommand(argv: string[]): Command {
  if (argv.length === 0 || argv[0] === "help" || argv.includes("--help") || argv.includes("-h")) return { kind: "help" };
  const [cmd, sub, ...rest] = argv;
  if (cmd === "migrate") {
    if (argv.length !== 1) throw new UsageError(`migrate takes no arguments (got ${argv.slice(1).join(" ")})`);
    return { kind: "migrate" };
  }
  if (cmd === "tenant" && sub === "create") {
    if (rest.length !== 1) throw new UsageError("tenant create takes one NAME");
    const name = TenantName.safeParse(rest[0]);
    if (!name.success) throw new UsageError(`tenant name ${rest[0]}: ${name.error.issues[0]?.message}`);
    return { kind: "tenant-create", name: name.data };
  }
  if (cmd === "key" && sub === "create") {
    const { values } = strictArgs(rest, { tenant: { type: "string" }, role: { type: "string" }, name: { type: "string" } }, false);
    const role = Role.safeParse(values.role);
    if (typeof values.tenant !== "string" || !role.success) throw new UsageError("key create needs --tenant NAME and --role viewer|operator|admin|superadmin");
    return { kind: "key-create", tenant: values.tenant, role: role.data, name: typeof values.name === "string" ? values.name : undefined };
  }
  if (cmd === "backup" || cmd === "restore") {
    if (argv.length !== 2) throw new UsageError(`${cmd} takes one FILE`);
    return { kind: cmd, file: argv[1]! };
  }
  if (cmd === "nats" && sub === "init") {
    const { values, positionals } = strictArgs(rest, { listen: { type: "string" } }, true);
    if (positionals.length !== 1) throw new UsageError("nats init takes one DIR");
    return { kind: "nats-init", dir: positionals[0]!, listen: typeof values.listen === "string" ? values.listen : undefined };
  }
  throw new UsageError(`unknown command: ${argv.join(" ")}`);
}

/** node:util parseArgs, its "unknown option" and "missing value" errors turned into usage errors. */
function strictArgs(args: string[], options: Record<string, { type: "string" }>, allowPositionals: boolean) {
  try {
    return parseArgs({ args, options, allowPositionals, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

// The database, NATS and service modules are loaded only once a command needs them: `--help`
// and a misused command line answer without loading the database drivers.
async function run(command: Exclude<Command, { kind: "help" }>): Promise<unknown> {
  if (command.kind === "nats-init") {
    const { initNatsAuthority } = await import("./bus/nats-auth.js");
    const result = await initNatsAuthority(command.dir, command.listen ? { listen: command.listen } : {});
    return {
      ...result,
      next: `nats-server -c ${result.files.server_config}; then run the controller with NATS_CREDS_FILE=${result.files.controller_creds} NATS_OPERATOR_SEED_FILE=${result.files.operator_signing_seed} NATS_SYSTEM_CREDS_FILE=${result.files.system_creds}`,
    };
  }
  const { loadConfig } = await import("./config.js");
  if (command.kind === "backup" || command.kind === "restore") return backupOrRestore(command, loadConfig());
  const { openDatabase } = await import("./db/connect.js");
  const { migrate } = await import("./db/migrate.js");
  const { findTenantByName } = await import("./db/tenants.js");
  const { mintApiKey, toApiKey } = await import("./services/access/api-keys.js");
  const { createAuditWriter } = await import("./services/access/audit.js");
  const { createTenantWithKey, toTenant } = await import("./services/access/tenants.js");
  const config = loadConfig();
  const db = await openDatabase({ url: config.DATABASE_URL, dataDir: config.APP_DATA_DIR, max: 2, applicationName: "rl-controller-cli" });
  try {
    const result = await migrate(db.sql);
    if (command.kind === "migrate") return { migrated: result.applied, schema_version: result.current };
    const audit = createAuditWriter({ pushEnabled: Boolean(config.AUTH_PORTAL_URL && config.AUTH_AUDIT_INGEST_SECRET) });
    const now = new Date();
    if (command.kind === "tenant-create") {
      return db.sql.begin(async (tx) => {
        const { tenant, key } = await createTenantWithKey(tx, command.name, "admin", now);
        await audit.recordSystem(tx, tenant.id, now, {
          actor: "cli",
          action: "create",
          resource_type: "tenant",
          resource_id: tenant.id,
          summary: `tenant ${tenant.name} created from the CLI`,
        });
        return { ...toTenant(tenant), admin_key: { ...toApiKey(key.row), secret: key.secret } };
      });
    }
    return db.sql.begin(async (tx) => {
      const tenant = await findTenantByName(tx, command.tenant);
      if (!tenant) throw new UsageError(`no tenant named ${command.tenant}`);
      const { row, secret } = await mintApiKey(tx, { tenantId: tenant.id, name: command.name ?? `cli ${command.role}`, role: command.role, now });
      await audit.recordSystem(tx, tenant.id, now, {
        actor: "cli",
        action: "create",
        resource_type: "api_key",
        resource_id: row.id,
        summary: `API key ${row.key_prefix} (${row.role}) created from the CLI`,
      });
      return { ...toApiKey(row), secret };
    });
  } finally {
    await db.close();
  }
}

async function backupOrRestore(command: { kind: "backup" | "restore"; file: string }, config: { DATABASE_URL?: string | undefined; APP_DATA_DIR: string }) {
  if (config.DATABASE_URL) {
    throw new UsageError(`${command.kind} is for the embedded database; with DATABASE_URL use pg_dump and pg_restore (docs/operate.md, "Backup and restore")`);
  }
  const { backupEmbedded, restoreEmbedded } = await import("./db/embedded-backup.js");
  if (command.kind === "backup") return { backup: command.file, data_dir: config.APP_DATA_DIR, ...(await backupEmbedded(config.APP_DATA_DIR, command.file)) };
  return { restored: command.file, data_dir: config.APP_DATA_DIR, ...(await restoreEmbedded(config.APP_DATA_DIR, command.file)) };
}

async function main(argv: string[]): Promise<void> {
  const command = parseCommand(argv);
  if (command.kind === "help") {
    process.stdout.write(`${usage}\n`);
    return;
  }
  if (command.kind === "backup" || command.kind === "restore") {
    const { loadConfig } = await import("./config.js");
    process.stdout.write(`${JSON.stringify(await backupOrRestore(command, loadConfig()))}\n`);
    return;
  }
  process.stdout.write(`${JSON.stringify(await run(command))}\n`);
}

main(process.argv.slice(2)).catch((err: unknown) => {
  if (err instanceof UsageError) {
    process.stderr.write(`controller: ${err.message}\nRun 'npm run controller -- --help' for the commands.\n`);
    process.exitCode = 2;
    return;
  }
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`${JSON.stringify({ error: message })}\n`);
  process.exitCode = 1;
});
