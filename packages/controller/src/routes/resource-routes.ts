import { Empty, page } from "@rlc/shared/schemas";
import type { FastifyContextConfig, FastifyReply, FastifyRequest, RouteGenericInterface } from "fastify";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { z } from "zod";
import type { Db } from "../plugins/types.js";
import type { RequestContext } from "../services/access/context.js";
import { authProblems, problems, writeProblems } from "./responses.js";

/**
 * The standard routes of a resource kept in a collection, declared once:
 *
 *   GET    {path}          list    → service.list(ctx, ...parents, query)            200 a page of items
 *   POST   {path}          create  → service.create(tx, ctx, ...parents, body)       201 the item, Location: {path}/{id}
 *   GET    {path}/:{id}    read    → service.get(ctx, ...parents, id)                200 the item
 *   PATCH  {path}/:{id}    update  → service.update(tx, ctx, ...parents, id, body)   200 the item
 *   DELETE {path}/:{id}    remove  → service.remove(tx, ctx, ...parents, id)         204 (200 with `response`)
 *
 * `parents` are the path parameters of the collection (`/v1/modules/:module_id/cdn-sources`
 * has one), in path order. Reads call the service with `req.ctx()` (the service reads on the
 * pool it was built with); writes run in `req.mutate` (one transaction with the idempotency record). Each route stays a thin adapter:
 * the schemas parse the request, one service call does the work, the answer is its result.
 *
 * Only the operations a resource declares are registered, collection routes before item
 * routes, so a file registers its own routes between `collectionRoutes` and `itemRoutes` where
 * the path order of the OpenAPI document wants them. An operation declared as `{}` takes every
 * default; summaries default to "List {many}", "Create {one}", "Read {one}", "Update {one}" and
 * "Delete {one}". A service whose calls differ from these (another name, no context, an extra
 * argument) is adapted where the resource is declared.
 */
/**
 * What the `:name` path parameters of a Fastify path hand a service, in path order: each as its
 * `params` schema parses it (a string where the schema does not name it).
 */
type PathArgs<P extends string, Parsed> = P extends `${string}:${infer Name}/${infer Rest}`
  ? [Name extends keyof Parsed ? Parsed[Name] : string, ...PathArgs<`/${Rest}`, Parsed>]
  : P extends `${string}:${infer Name}`
    ? [Name extends keyof Parsed ? Parsed[Name] : string]
    : [];

/** A schema's parsed value, or nothing when the operation declares no such schema. */
type Parsed<S> = S extends z.ZodType ? [z.output<S>] : [];
/** The parsed value of an optional schema, or an empty object. */
type Output<S> = S extends z.ZodType ? z.output<S> : object;

/**
 * The service calls of the standard routes a resource declares, typed by its path parameters
 * (as its `params` schemas parse them), leading and write arguments, the parsed query and body.
 * A service whose method takes other arguments does not compile; a declared operation whose
 * method the service lacks fails at start-up.
 */
export type ResourceService<
  P extends string,
  Id extends string,
  ItemParams,
  ParentParams,
  Lead extends readonly unknown[],
  Write extends readonly unknown[],
  ListQuery,
  CreateBody,
  UpdateBody,
  RemoveQuery,
> = (ListQuery extends z.ZodType
  ? { list?: (ctx: RequestContext, ...args: [...Lead, ...PathArgs<P, Output<ParentParams>>, ...Parsed<ListQuery>]) => Promise<unknown> }
  : object) &
  (CreateBody extends z.ZodType
    ? { create?: (tx: Db, ctx: RequestContext, ...args: [...Lead, ...PathArgs<P, Output<ParentParams>>, ...Parsed<CreateBody>, ...Write]) => Promise<object> }
    : object) &
  (UpdateBody extends z.ZodType
    ? {
        update?: (
          tx: Db,
          ctx: RequestContext,
          ...args: [...Lead, ...PathArgs<`${P}/:${Id}`, Output<ItemParams>>, ...Parsed<UpdateBody>, ...Write]
        ) => Promise<unknown>;
      }
    : object) & {
    get?: (ctx: RequestContext, ...args: [...Lead, ...PathArgs<`${P}/:${Id}`, Output<ItemParams>>]) => Promise<unknown>;
    remove?: (tx: Db, ctx: RequestContext, ...args: [...Lead, ...PathArgs<`${P}/:${Id}`, Output<ItemParams>>, ...Parsed<RemoveQuery>]) => Promise<unknown>;
  };

export interface Resource<
  P extends string = string,
  Id extends string = string,
  ItemParams extends z.ZodType = z.ZodType,
  ParentParams extends z.ZodType | undefined = z.ZodType | undefined,
  Lead extends readonly unknown[] = readonly unknown[],
  Write extends readonly unknown[] = readonly unknown[],
  ListQuery extends z.ZodType | undefined = z.ZodType | undefined,
  CreateBody extends z.ZodType | undefined = z.ZodType | undefined,
  UpdateBody extends z.ZodType | undefined = z.ZodType | undefined,
  RemoveQuery extends z.ZodType | undefined = z.ZodType | undefined,
> {
  tags: string[];
  /** The collection's path in Fastify form, e.g. `/v1/communities` or `/v1/modules/:module_id/cdn-sources`. */
  path: P;
  /** The item's path parameter (`id`, `module_id`, …): the item routes are `{path}/:{id}`. */
  id: Id;
  /** The schema of the item routes' path parameters. */
  params: ItemParams;
  /** The schema of the collection routes' path parameters, for a collection inside another resource (they also answer 404 then). */
  parentParams?: ParentParams;
  /** "a community" and "communities": the words of the default summaries. */
  one: string;
  many: string;
  /** The item as answered by list (in a page), create, read and update. */
  item: z.ZodType;
  service: NoInfer<ResourceService<P, Id, ItemParams, ParentParams, Lead, Write, ListQuery, CreateBody, UpdateBody, RemoveQuery>>;
  /** Values passed before the path parameters on every call (e.g. the kind of entry). */
  leadingArgs?: Lead;
  /** Values passed after the body on create and update (e.g. the outbound rules a URL is checked against). */
  writeArgs?: Write;
  /** The member of a created item that names it in its Location (default `id`). */
  createdId?: string;
  /** Who may call every route (see plugins/access.ts); none: the default of the method. */
  config?: FastifyContextConfig;
  /** Who may call create, update and remove, where it differs from `config`. */
  writeConfig?: FastifyContextConfig;
  list?: Operation & { querystring: ListQuery & z.ZodType };
  create?: Operation & { body: CreateBody & z.ZodType };
  read?: Operation;
  update?: Operation & { body: UpdateBody & z.ZodType };
  /** A delete with a `querystring` hands the parsed query to `service.remove` after the id. */
  remove?: Operation & { querystring?: RemoveQuery };
}

/**
 * Declares a resource: its service's methods are checked against its path parameters, schemas
 * and arguments here (a mismatch does not compile), and the helpers below register its routes
 * (`resourceRoutes(app, resource({...}))`, or `collectionRoutes` and `itemRoutes` apart for a
 * file that puts its own routes between them).
 */
export function resource<
  const P extends string,
  const Id extends string,
  ItemParams extends z.ZodType,
  ParentParams extends z.ZodType | undefined = undefined,
  const Lead extends readonly unknown[] = [],
  const Write extends readonly unknown[] = [],
  ListQuery extends z.ZodType | undefined = undefined,
  CreateBody extends z.ZodType | undefined = undefined,
  UpdateBody extends z.ZodType | undefined = undefined,
  RemoveQuery extends z.ZodType | undefined = undefined,
>(r: Resource<P, Id, ItemParams, ParentParams, Lead, Write, ListQuery, CreateBody, UpdateBody, RemoveQuery>): DeclaredResource {
  return r;
}

/** Where one operation differs from the standard one. */
export interface Operation {
  summary?: string;
  description?: string;
  /** The answer's schema where it is not the item (or, for remove, a 200 body instead of the 204). */
  response?: z.ZodType;
  /** Problems beside the standard ones (e.g. 429 for a write that enqueues a job). */
  problems?: number[];
}

/**
 * A resource as the helpers register it, once `resource()` has checked its service against its
 * schemas: the helpers read its declarations and call its service's methods by name.
 */
export type DeclaredResource = Omit<Resource, "service"> & { service: object };

/** A declared service call as the helpers make it: the arguments are put together from the request at run time. */
type Call = (...args: unknown[]) => Promise<unknown>;

type App = Parameters<FastifyPluginAsyncZod>[0];
type Params = Record<string, unknown>;

/** `:name` path parameters of a Fastify path, in order. */
const parameterNames = (path: string) => [...path.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]!);

/** The service call of a declared operation, bound to its service; a resource that declares one its service lacks fails at start-up. */
function method(service: object, name: "list" | "create" | "get" | "update" | "remove"): Call {
  const call = (service as Record<string, Call | undefined>)[name];
  if (!call) throw new Error(`the resource's service has no ${name}()`);
  return call.bind(service);
}

/** The leading arguments, then the values of the path's parameters, as a service call takes them. */
const argumentsOf = (r: DeclaredResource, path: string) => {
  const names = parameterNames(path);
  return (req: FastifyRequest) => [...(r.leadingArgs ?? []), ...names.map((n) => (req.params as Params)[n])];
};

/** The collection routes (list, create) of a resource, as far as it declares them. */
export function collectionRoutes(app: App, r: DeclaredResource) {
  const parents = argumentsOf(r, r.path);
  // A collection inside another resource answers 404 when that one does not exist.
  const nested = r.parentParams ? { params: r.parentParams } : {};
  const missing = r.parentParams ? [404] : [];

  if (r.list) {
    const { querystring, ...op } = r.list;
    const list = method(r.service, "list");
    const request = { ...nested, querystring };
    addRoute(app, r, op, { method: "GET", url: r.path, summary: `List ${r.many}`, request, status: 200, answer: page(r.item), missing }, (req) =>
      list(req.ctx(), ...parents(req), req.query),
    );
  }

  if (r.create) {
    const { body, ...op } = r.create;
    const create = method(r.service, "create");
    const createdId = r.createdId ?? "id";
    const standard: Standard = { method: "POST", url: r.path, summary: `Create ${r.one}`, request: { ...nested, body }, status: 201, answer: r.item, missing };
    addRoute(app, r, op, standard, (req, reply) =>
      req.mutate(reply, async (tx, ctx) => {
        const created = (await create(tx, ctx, ...parents(req), req.body, ...(r.writeArgs ?? []))) as Record<string, unknown>;
        return { status: 201, body: created, headers: { location: `${fill(r.path, req.params as Params)}/${String(created[createdId])}` } };
      }),
    );
  }
}

/** The item routes (read, update, remove) of a resource, as far as it declares them. */
export function itemRoutes(app: App, r: DeclaredResource) {
  const url = `${r.path}/:${r.id}`;
  const ids = argumentsOf(r, url);
  const item = { url, request: { params: r.params }, missing: [404] };

  if (r.read) {
    const get = method(r.service, "get");
    addRoute(app, r, r.read, { ...item, method: "GET", summary: `Read ${r.one}`, status: 200, answer: r.item }, (req) => get(req.ctx(), ...ids(req)));
  }

  if (r.update) {
    const { body, ...op } = r.update;
    const update = method(r.service, "update");
    const standard: Standard = { ...item, method: "PATCH", summary: `Update ${r.one}`, request: { params: r.params, body }, status: 200, answer: r.item };
    addRoute(app, r, op, standard, (req, reply) =>
      req.mutate(reply, async (tx, ctx) => ({ status: 200, body: await update(tx, ctx, ...ids(req), req.body, ...(r.writeArgs ?? [])) })),
    );
  }

  if (r.remove) {
    const { querystring, ...op } = r.remove;
    const remove = method(r.service, "remove");
    // A delete answers 204 with no body, unless the resource says what it answers instead.
    const status = op.response ? 200 : 204;
    const request = { params: r.params, ...(querystring ? { querystring } : {}) };
    addRoute(app, r, op, { ...item, method: "DELETE", summary: `Delete ${r.one}`, request, status, answer: Empty }, (req, reply) =>
      req.mutate(reply, async (tx, ctx) => {
        const removed = await remove(tx, ctx, ...ids(req), ...(querystring ? [req.query] : []));
        return status === 200 ? { status, body: removed } : { status, body: undefined };
      }),
    );
  }
}

/** Both: the collection routes, then the item routes. */
export function resourceRoutes(app: App, r: DeclaredResource) {
  collectionRoutes(app, r);
  itemRoutes(app, r);
}

/** A standard operation before the resource's own words, answer and problems are laid over it. */
interface Standard {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  url: string;
  summary: string;
  /** `params`, `querystring` and `body`, as far as the route has them. */
  request: Record<string, z.ZodType | undefined>;
  /** The status of a success and its default schema (`Operation.response` replaces it). */
  status: number;
  answer: z.ZodType;
  /** The route answers 404 when what its path names does not exist. */
  missing: number[];
}

/**
 * Registers one route. Its schema lists tags, summary, description, params, querystring, body
 * and response in the order the route files always wrote them, so the OpenAPI document is the
 * same; reads answer the standard problems of a read, the others those of a write, and reads
 * and writes take the resource's `config` and `writeConfig` for access.
 */
function addRoute(
  app: App,
  r: Pick<Resource, "tags" | "config" | "writeConfig">,
  op: Operation,
  standard: Standard,
  handler: (req: FastifyRequest, reply: FastifyReply) => Promise<unknown>,
) {
  const reads = standard.method === "GET";
  const config = reads ? r.config : (r.writeConfig ?? r.config);
  app.route<RouteGenericInterface, FastifyContextConfig>({
    method: standard.method,
    url: standard.url,
    schema: {
      tags: r.tags,
      summary: op.summary ?? standard.summary,
      ...(op.description === undefined ? {} : { description: op.description }),
      ...standard.request,
      response: {
        [standard.status]: op.response ?? standard.answer,
        ...(reads ? authProblems : writeProblems),
        ...problems(...standard.missing, ...(op.problems ?? [])),
      },
    },
    // A route declares its access only where the resource does.
    ...(config ? { config } : {}),
    handler,
  });
}

/** The collection path with its parameters filled in from the request, for a Location. */
const fill = (path: string, params: Params) => path.replace(/:([A-Za-z0-9_]+)/g, (_, name: string) => String(params[name]));
