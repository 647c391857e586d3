import {
  AsEntry,
  CreateAsEntryBody,
  CreateDomainEntryBody,
  CreateIpRangeEntryBody,
  DomainEntry,
  Empty,
  EntryListQuery,
  IpRangeEntry,
  ModuleEntryParams,
  ModuleParams,
  page,
  UpdateAsEntryBody,
  UpdateDomainEntryBody,
  UpdateIpRangeEntryBody,
} from "@rlc/shared/schemas";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { z } from "zod";
import type { AppDeps } from "../../app-deps.js";
import type { EntryInputOf, EntryKind } from "../../services/route-lists/entries.js";
import { authProblems, problems, writeProblems } from "../responses.js";

/** The three entry collections differ only by schemas, path and words. */
const collections = [
  {
    kind: "as",
    path: "as-entries",
    item: AsEntry,
    create: CreateAsEntryBody,
    update: UpdateAsEntryBody,
    noun: "AS entry",
    a: "an AS entry",
    rules: "`asn` 1..4294967295, `AS13335` accepted; a `prefix` member is refused (removed). Only on AS_PREFIXES modules.",
  },
  {
    kind: "domain",
    path: "domain-entries",
    item: DomainEntry,
    create: CreateDomainEntryBody,
    update: UpdateDomainEntryBody,
    noun: "domain entry",
    a: "a domain entry",
    rules: "The name is lower-cased, its trailing dot removed and an IDN turned into punycode. Only on DOMAINS modules.",
  },
  {
    kind: "ip_range",
    path: "ip-range-entries",
    item: IpRangeEntry,
    create: CreateIpRangeEntryBody,
    update: UpdateIpRangeEntryBody,
    noun: "IP-range entry",
    a: "an IP-range entry",
    rules: "Canonical CIDR; a bare address is a /32 or /128; host bits set is a 400 naming the network. Only on IP_RANGES modules.",
  },
] as const satisfies readonly {
  kind: EntryKind;
  path: string;
  item: z.ZodType;
  create: z.ZodType;
  update: z.ZodType;
  noun: string;
  a: string;
  rules: string;
}[];

const entryRoutes: FastifyPluginAsyncZod<{ deps: AppDeps }> = async (app, { deps }) => {
  const entries = deps.services.entries;

  for (const c of collections) {
    const tags = ["entries"];
    const base = `/v1/modules/:module_id/${c.path}`;
    const input = (body: unknown) => body as EntryInputOf[typeof c.kind];

    app.get(
      base,
      {
        schema: {
          tags,
          summary: `List a module's ${c.noun.replace("entry", "entries")}`,
          params: ModuleParams,
          querystring: EntryListQuery,
          response: { 200: page(c.item), ...authProblems, ...problems(404) },
        },
      },
      async (req) => entries.list(deps.sql, req.ctx(), c.kind, req.params.module_id, req.query),
    );

    app.post(
      base,
      {
        schema: {
          tags,
          summary: `Add ${c.a}`,
          description: `${c.rules} A value already in the module is a 409; a module of another type is a 400.`,
          params: ModuleParams,
          body: c.create,
          response: { 201: c.item, ...writeProblems, ...problems(404) },
        },
      },
      async (req, reply) =>
        req.mutate(reply, async (tx, ctx) => {
          const body = await entries.create(tx, ctx, c.kind, req.params.module_id, input(req.body));
          return { status: 201, body, headers: { location: `/v1/modules/${req.params.module_id}/${c.path}/${body.id}` } };
        }),
    );

    app.get(
      `${base}/:entry_id`,
      { schema: { tags, summary: `Read ${c.a}`, params: ModuleEntryParams, response: { 200: c.item, ...authProblems, ...problems(404) } } },
      async (req) => entries.get(deps.sql, req.ctx(), c.kind, req.params.module_id, req.params.entry_id),
    );

    app.patch(
      `${base}/:entry_id`,
      {
        schema: {
          tags,
          summary: `Update ${c.a}`,
          description: c.rules,
          params: ModuleEntryParams,
          body: c.update,
          response: { 200: c.item, ...writeProblems, ...problems(404) },
        },
      },
      async (req, reply) =>
        req.mutate(reply, async (tx, ctx) => ({
          status: 200,
          body: await entries.update(tx, ctx, c.kind, req.params.module_id, req.params.entry_id, input(req.body)),
        })),
    );

    app.delete(
      `${base}/:entry_id`,
      { schema: { tags, summary: `Delete ${c.a}`, params: ModuleEntryParams, response: { 204: Empty, ...writeProblems, ...problems(404) } } },
      async (req, reply) =>
        req.mutate(reply, async (tx, ctx) => {
          await entries.remove(tx, ctx, c.kind, req.params.module_id, req.params.entry_id);
          return { status: 204, body: undefined };
        }),
    );
  }
};

export default entryRoutes;
