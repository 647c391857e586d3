import { type Schema, unwrap } from "@rlc/client";
import type { Command } from "commander";
import { deleteEachCommand, listCommand, printOne, withContext } from "../command-kit.js";
import { usageError } from "../exit-codes.js";
import { type Column, fieldColumns } from "../output.js";

type ApiKey = Schema<"ApiKey">;
type AuditRecord = Schema<"AuditRecord">;
const ROLES = ["viewer", "operator", "admin", "superadmin"] as const;

const keyColumns = fieldColumns<ApiKey>({
  ID: "id",
  NAME: "name",
  ROLE: "role",
  PREFIX: "key_prefix",
  "LAST USED": "last_used_at",
  EXPIRES: "expires_at",
  REVOKED: "revoked_at",
});

/** A created or rotated key: who it is, and the secret shown this once. */
const withSecret: Column<ApiKey & { secret: string | null }>[] = [...keyColumns.slice(0, 4), { header: "SECRET", value: (k) => k.secret }];

export function keysCommand(program: Command): void {
  const keys = program.command("keys").alias("key").description("API keys of your tenant: ls, create, rotate, revoke");

  listCommand(keys, "ls", {
    description: "list API keys",
    filters: [["--role <role>", "only this role"]],
    max: 10_000,
    page: (ctx, query, opts: { role?: ApiKey["role"] }) => ctx.client.GET("/v1/api-keys", { params: { query: { ...query, role: opts.role } } }),
    columns: keyColumns,
  });

  keys
    .command("create <name>")
    .description("create a key (its secret is shown once)")
    .requiredOption("--role <role>", ROLES.join(", "))
    .option("--expires <when>", "an ISO date-time after which it stops working")
    .action(
      withContext(async (ctx, name: string, opts: { role: string; expires?: string }) => {
        if (!(ROLES as readonly string[]).includes(opts.role)) throw usageError(`--role ${opts.role}: choose ${ROLES.join(", ")}`);
        const expires_at = opts.expires ? new Date(opts.expires) : undefined;
        if (expires_at && Number.isNaN(expires_at.getTime())) throw usageError(`--expires ${opts.expires} is not a date`);
        const created = await unwrap(
          ctx.client.POST("/v1/api-keys", { body: { name, role: opts.role as (typeof ROLES)[number], expires_at: expires_at?.toISOString() } }),
        );
        printOne(ctx, created, withSecret);
        if (ctx.output.format === "table") ctx.output.err("the secret is shown only this once\n");
      }),
    );

  keys
    .command("rotate <key>")
    .description("rotate your own key or one of a lower role (prints the new secret)")
    .action(
      withContext(async (ctx, id: string) => {
        printOne(ctx, await unwrap(ctx.client.POST("/v1/api-keys/{id}/rotate", { params: { path: { id } }, body: {} })), withSecret);
      }),
    );

  deleteEachCommand(keys, "revoke <key...>", "revoke keys", async (ctx, id) => {
    await unwrap(ctx.client.DELETE("/v1/api-keys/{id}", { params: { path: { id } } }));
    return `revoked ${id}`;
  }).alias("rm");
}

const auditColumns: Column<AuditRecord>[] = [
  { header: "AT", value: (r) => r.at },
  { header: "ACTOR", value: (r) => (r.actor.key_prefix ? `${r.actor.key_prefix} (${r.actor.role})` : "system") },
  { header: "ACTION", value: (r) => r.action },
  { header: "RESOURCE", value: (r) => `${r.resource_type}${r.resource_id ? ` ${r.resource_id}` : ""}` },
  { header: "SEVERITY", value: (r) => r.severity },
  { header: "SUMMARY", value: (r) => r.summary },
];

export function auditCommand(program: Command): void {
  listCommand(program, "audit", {
    description: "the audit journal, newest first",
    filters: [
      ["--action <action>", "create, update, delete, apply, rollback, …"],
      ["--resource <type>", "module, api_key, speaker, …"],
      ["--severity <severity>", "info, warning or critical"],
      ["--since <when>", "an ISO date-time"],
    ],
    limit: 50,
    page: (
      ctx,
      page,
      opts: { action?: AuditRecord["action"]; resource?: AuditRecord["resource_type"]; severity?: AuditRecord["severity"]; since?: string },
    ) => {
      const query = { action: opts.action, resource_type: opts.resource, severity: opts.severity, since: opts.since };
      return ctx.client.GET("/v1/audit", { params: { query: { ...query, ...page } } });
    },
    columns: auditColumns,
  });
}
