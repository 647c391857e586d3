import { createClient, type RlClient, type Schema, unwrap } from "@rlc/client";
import type { Command } from "commander";
import { CliError, ExitCode } from "./exit-codes.js";
import { type Output, parseFormat, wantsColor } from "./output.js";
import { type Connection, resolveConnection } from "./profiles.js";

/** What every command works with: the typed client, the connection it uses, and the output. */
export interface Ctx {
  client: RlClient;
  connection: Connection;
  output: Output;
}

interface GlobalFlags {
  output: string;
  profile?: string;
  url?: string;
  apiKey?: string;
}

export function outputOf(cmd: Command): Output {
  const flags = cmd.optsWithGlobals<GlobalFlags>();
  return {
    format: parseFormat(flags.output ?? "table"),
    color: wantsColor(process.stdout),
    interactive: Boolean(process.stderr.isTTY),
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
  };
}

/** The context of a command that talks to the controller; fails with exit 3 when no key is set. */
export async function contextOf(cmd: Command): Promise<Ctx> {
  const flags = cmd.optsWithGlobals<GlobalFlags>();
  const output = outputOf(cmd);
  const connection = await resolveConnection({ url: flags.url, apiKey: flags.apiKey, profile: flags.profile });
  if (!connection.apiKey)
    throw new CliError(`no API key for ${connection.url} (${connection.source}): pass --api-key, set RL_API_KEY or add one to the profile`, ExitCode.auth);
  return { client: createClient({ baseUrl: connection.url, apiKey: connection.apiKey }), connection, output };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (s: string) => UUID.test(s);

interface Page<T> {
  items: T[];
  next_cursor: string | null;
  has_more: boolean;
}

/** Follows `next_cursor` until `max` items (or the end), 500 a page at most. */
export async function listAll<T>(max: number, page: (cursor: string | undefined, limit: number) => Promise<Page<T>>): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | undefined;
  while (items.length < max) {
    const p = await page(cursor, Math.min(500, max - items.length));
    items.push(...p.items);
    if (!p.has_more || !p.next_cursor) break;
    cursor = p.next_cursor;
  }
  return items;
}

/** A module by id or by exact name. */
export async function resolveModule(ctx: Ctx, ref: string): Promise<Schema<"Module">> {
  if (isUuid(ref)) return unwrap(ctx.client.GET("/v1/modules/{module_id}", { params: { path: { module_id: ref } } }));
  const found = await unwrap(ctx.client.GET("/v1/modules", { params: { query: { q: ref, limit: 500 } } }));
  const mod = found.items.find((m) => m.name === ref);
  if (!mod) throw new CliError(`no module named ${ref}`, ExitCode.notFound);
  return mod;
}

/** A speaker by id or by exact name. */
export async function resolveSpeaker(ctx: Ctx, ref: string): Promise<Schema<"Speaker">> {
  if (isUuid(ref)) return unwrap(ctx.client.GET("/v1/speakers/{speaker_id}", { params: { path: { speaker_id: ref } } }));
  const all = await listAll(5000, (cursor, limit) => unwrap(ctx.client.GET("/v1/speakers", { params: { query: { cursor, limit } } })));
  const speaker = all.find((s) => s.name === ref);
  if (!speaker) throw new CliError(`no speaker named ${ref}`, ExitCode.notFound);
  return speaker;
}

/** A community by id or by its value (`65000:100`). */
export async function resolveCommunity(ctx: Ctx, ref: string): Promise<Schema<"Community">> {
  if (isUuid(ref)) return unwrap(ctx.client.GET("/v1/communities/{id}", { params: { path: { id: ref } } }));
  const all = await listAll(5000, (cursor, limit) => unwrap(ctx.client.GET("/v1/communities", { params: { query: { cursor, limit } } })));
  const community = all.find((c) => c.community === ref || c.title === ref);
  if (!community) throw new CliError(`no community ${ref}`, ExitCode.notFound);
  return community;
}

export function positiveInt(name: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1) throw new CliError(`${name} must be a positive integer (got ${value})`, ExitCode.usage);
    return n;
  };
}
