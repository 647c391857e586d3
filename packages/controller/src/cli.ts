#!/usr/bin/env node
import { parseArgs } from "node:util";
import { Role, TenantName } from "@rlc/shared/schemas";
import { initNatsAuthority } from "./bus/nats-auth.js";
import { ConfigError, loadConfig } from "./config.js";
import { openDatabase } from "./db/connect.js";
import { migrate } from "./db/migrate.js";
import { findTenantByName } from "./db/tenants.js";
import { mintApiKey, toApiKey } from "./services/api-keys.js";
import { createAuditWriter } from "./services/audit.js";
import { createTenantWithKey, toTenant } from "./services/tenants.js";

const usage = `usage:
  controller migrate
  controller tenant create NAME
  controller key create --tenant NAME --role viewer|operator|admin|superadmin [--name NAME]
  controller nats init DIR [--listen HOST:PORT]
Each command prints one JSON object. It uses DATABASE_URL, or the embedded database under
APP_DATA_DIR (stop a controller that runs on the same embedded database first).`;

class UsageError extends Error {}

async function main(argv: string[]): Promise<unknown> {
  // Needs no database: it only makes keys and files.
  if (argv[0] === "nats") return natsCommand(argv.slice(1));
  const config = loadConfig();
  const db = await openDatabase({ url: config.DATABASE_URL, dataDir: config.APP_DATA_DIR, max: 2, applicationName: "rl-controller-cli" });
  try {
    const [cmd, sub, ...rest] = argv;
    const result = await migrate(db.sql);
    if (cmd === "migrate" && sub === undefined) return { migrated: result.applied, schema_version: result.current };
    const audit = createAuditWriter({ pushEnabled: Boolean(config.AUTH_PORTAL_URL && config.AUTH_AUDIT_INGEST_SECRET) });
    const now = new Date();
    if (cmd === "tenant" && sub === "create" && rest.length === 1) {
      const name = TenantName.safeParse(rest[0]);
      if (!name.success) throw new UsageError(`tenant name ${rest[0]}: ${name.error.issues[0]?.message}`);
      return db.sql.begin(async (tx) => {
        const { tenant, key } = await createTenantWithKey(tx, name.data, "admin", now);
        await audit.recordSystem(tx, tenant.id, now, {
          actor: "cli", action: "create", resource_type: "tenant", resource_id: tenant.id, summary: `tenant ${tenant.name} created from the CLI`,
        });
        return { ...toTenant(tenant), admin_key: { ...toApiKey(key.row), secret: key.secret } };
      });
    }
    if (cmd === "key" && sub === "create") {
      const { values } = parseArgs({ args: rest, options: { tenant: { type: "string" }, role: { type: "string" }, name: { type: "string" } }, strict: true });
      const role = Role.safeParse(values.role);
      if (!values.tenant || !role.success) throw new UsageError("key create needs --tenant NAME and --role viewer|operator|admin|superadmin");
      return db.sql.begin(async (tx) => {
        const tenant = await findTenantByName(tx, values.tenant!);
        if (!tenant) throw new UsageError(`no tenant named ${values.tenant}`);
        const { row, secret } = await mintApiKey(tx, { tenantId: tenant.id, name: values.name ?? `cli ${role.data}`, role: role.data, now });
        await audit.recordSystem(tx, tenant.id, now, {
          actor: "cli", action: "create", resource_type: "api_key", resource_id: row.id, summary: `API key ${row.key_prefix} (${row.role}) created from the CLI`,
        });
        return { ...toApiKey(row), secret };
      });
    }
    throw new UsageError(usage);
  } finally {
    await db.close();
  }
}

async function natsCommand(args: string[]): Promise<unknown> {
  const { values, positionals } = parseArgs({ args, options: { listen: { type: "string" } }, allowPositionals: true, strict: true });
  if (positionals[0] !== "init" || positionals.length !== 2) throw new UsageError(usage);
  const result = await initNatsAuthority(positionals[1]!, values.listen ? { listen: values.listen } : {});
  return {
    ...result,
    next: `nats-server -c ${result.files.server_config}; then run the controller with NATS_CREDS_FILE=${result.files.controller_creds} NATS_ACCOUNT_SEED_FILE=${result.files.account_signing_seed}`,
  };
}

main(process.argv.slice(2)).then(
  (out) => {
    process.stdout.write(`${JSON.stringify(out)}\n`);
  },
  (err) => {
    const message = err instanceof UsageError || err instanceof ConfigError ? err.message : err instanceof Error ? err.message : String(err);
    process.stderr.write(`${JSON.stringify({ error: message })}\n`);
    process.exitCode = err instanceof UsageError ? 2 : 1;
  },
);
