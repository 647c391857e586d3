import { ConflictError, NotFoundError, ValidationError } from "@rlc/shared/errors";
import { formatCidrValue, parseCidrValue } from "@rlc/shared/prefix";
import type { AsEntry, AuditResourceType, CountryEntry, DomainEntry, IpRangeEntry, ModuleType } from "@rlc/shared/schemas";
import type { Db } from "../../db/connect.js";
import {
  type AsEntryRow,
  type CountryEntryRow,
  type DomainEntryRow,
  deleteEntry,
  type EntryKind,
  type EntryRowOf,
  findEntryById,
  type IpRangeEntryRow,
  insertAsEntry,
  insertCountryEntry,
  insertDomainEntry,
  insertIpRangeEntry,
  listEntries,
  updateAsEntry,
  updateCountryEntry,
  updateDomainEntry,
  updateIpRangeEntry,
} from "../../db/entries.js";
import type { ModuleRow } from "../../db/modules.js";
import { isForeignKeyViolation, isUniqueViolation } from "../../db/pg-errors.js";
import { normaliseAsnOrSet, normaliseAsSet } from "../../lib/as-set.js";
import { normaliseAsn } from "../../lib/asn.js";
import { type Page, toPage } from "../../lib/cursor.js";
import { normaliseDomain } from "../../lib/domain-name.js";
import { afterIdOf } from "../../lib/id-cursor.js";
import { uuidv7 } from "../../lib/ids.js";
import { isoRequired } from "../../lib/time.js";
import { accept, refuse, type ValueResult } from "../../lib/value-result.js";
import { type AuditWriter, changesOf } from "../access/audit.js";
import type { RequestContext } from "../access/context.js";
import { mustFindModule } from "./modules.js";

export type { EntryKind } from "../../db/entries.js";

export interface EntryOf {
  as: AsEntry;
  domain: DomainEntry;
  ip_range: IpRangeEntry;
  country: CountryEntry;
}

/** Bodies after schema validation; values are normalised here, the same way as CSV rows. */
export interface EntryInputOf {
  as: { asn?: number | string | undefined; as_set?: string | undefined; comment?: string | undefined };
  domain: { domain?: string | undefined; include_subdomains?: boolean | undefined; comment?: string | undefined };
  ip_range: { cidr?: string | undefined; comment?: string | undefined };
  country: { country?: string | undefined; comment?: string | undefined };
}

/** Per kind: the module type it belongs to, its value field and how to read, write and show it. */
export const ENTRY_KINDS = {
  as: { moduleType: "AS_PREFIXES", field: "asn", resource: "as_entry", label: "AS entry" },
  domain: { moduleType: "DOMAINS", field: "domain", resource: "domain_entry", label: "domain entry" },
  ip_range: { moduleType: "IP_RANGES", field: "cidr", resource: "ip_range_entry", label: "IP-range entry" },
  country: { moduleType: "COUNTRY", field: "country", resource: "country_entry", label: "country entry" },
} as const satisfies Record<EntryKind, { moduleType: ModuleType; field: string; resource: AuditResourceType; label: string }>;

export function kindOfModule(type: ModuleType): EntryKind {
  return type === "AS_PREFIXES" ? "as" : type === "DOMAINS" ? "domain" : type === "COUNTRY" ? "country" : "ip_range";
}

/** The canonical value of one written value of `kind` (a JSON field or a CSV cell). */
export function normaliseEntryValue(kind: EntryKind, value: number | string): ValueResult<string | number> {
  if (kind === "as") return normaliseAsnOrSet(value);
  if (typeof value !== "string") return { ok: false, message: "must be a string" };
  if (kind === "domain") return normaliseDomain(value);
  if (kind === "country") return normaliseCountry(value);
  return normaliseCidr(value);
}

const PREFIX_LENGTH = /^(?:0|[1-9][0-9]{0,2})$/;

/**
 * The canonical text of an IPv4 or IPv6 CIDR, or of a bare address (a /32 or /128). Host bits
 * set are refused with the network named (`10.0.0.1/8` → "did you mean 10.0.0.0/8"); a prefix
 * length with a leading zero is refused rather than guessed at.
 */
function normaliseCidr(input: string): ValueResult<string> {
  const text = input.trim();
  const quoted = `"${text.slice(0, 60)}"`;
  const slash = text.indexOf("/");
  if (slash !== -1 && !PREFIX_LENGTH.test(text.slice(slash + 1))) return refuse(`${quoted} has an invalid prefix length`);
  const parsed = parseCidrValue(text);
  if (!parsed.ok) {
    return refuse(
      parsed.code === "invalid_prefix_length"
        ? `${quoted} has a prefix length out of range (0..32 for IPv4, 0..128 for IPv6)`
        : `${quoted} is not an IPv4 or IPv6 address or CIDR`,
    );
  }
  const canonical = formatCidrValue(parsed.cidr);
  return parsed.masked ? refuse(`host bits set in ${text}: did you mean ${canonical}`) : accept(canonical);
}

/** ISO 3166-1 alpha-2 codes: the officially assigned ones, and `AP`, `EU` and `UK`, which the registries use as well. */
const COUNTRIES = new Set(
  (
    "AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV BW BY BZ CA CC CD CF CG CH CI CK CL CM CN " +
    "CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM " +
    "HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK " +
    "ML MM MN MO MP MQ MR MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO RS RU RW " +
    "SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW TZ UA UG UM US UY UZ VA VC VE VG VI " +
    "VN VU WF WS YE YT ZA ZM ZW AP EU UK"
  ).split(" "),
);

/** A country code, upper-cased; refused unless it is an assigned ISO 3166-1 alpha-2 code. */
function normaliseCountry(input: string): ValueResult<string> {
  const code = input.trim().toUpperCase();
  const quoted = `"${input.trim().slice(0, 20)}"`;
  if (!/^[A-Z]{2}$/.test(code)) return refuse(`${quoted} is not an ISO 3166-1 alpha-2 country code (two letters, such as NL)`);
  return COUNTRIES.has(code) ? accept(code) : refuse(`${quoted} is not an assigned ISO 3166-1 alpha-2 country code`);
}

const base = (row: EntryRowOf[EntryKind]) => ({
  id: row.id,
  module_id: row.module_id,
  comment: row.comment,
  created_at: isoRequired(row.created_at),
  updated_at: isoRequired(row.updated_at),
});

export const toAsEntry = (row: AsEntryRow): AsEntry => ({ ...base(row), asn: row.asn === null ? null : Number(row.asn), as_set: row.as_set ?? null });
export const toDomainEntry = (row: DomainEntryRow): DomainEntry => ({ ...base(row), domain: row.domain, include_subdomains: row.include_subdomains });
export const toIpRangeEntry = (row: IpRangeEntryRow): IpRangeEntry => ({ ...base(row), cidr: row.cidr });
export const toCountryEntry = (row: CountryEntryRow): CountryEntry => ({ ...base(row), country: row.country });

export function toEntry<K extends EntryKind>(kind: K, row: EntryRowOf[K]): EntryOf[K] {
  if (kind === "as") return toAsEntry(row as AsEntryRow) as EntryOf[K];
  if (kind === "domain") return toDomainEntry(row as DomainEntryRow) as EntryOf[K];
  if (kind === "country") return toCountryEntry(row as CountryEntryRow) as EntryOf[K];
  return toIpRangeEntry(row as IpRangeEntryRow) as EntryOf[K];
}

function entryValue(kind: EntryKind, row: EntryRowOf[EntryKind]): string | number {
  if (kind === "country") return (row as CountryEntryRow).country;
  return kind === "as" ? asValue(row as AsEntryRow) : kind === "domain" ? (row as DomainEntryRow).domain : (row as IpRangeEntryRow).cidr;
}

type AnyEntryInput = EntryInputOf["domain"] & EntryInputOf["as"] & EntryInputOf["ip_range"] & EntryInputOf["country"];
const rawValue = (kind: EntryKind, input: AnyEntryInput) =>
  kind === "as" ? input.asn : kind === "domain" ? input.domain : kind === "country" ? input.country : input.cidr;

const asValue = (row: AsEntryRow): string | number => (row.asn === null ? row.as_set! : Number(row.asn));

function display(kind: EntryKind, value: string | number): string {
  return kind === "as" && typeof value === "number" ? `AS${value}` : String(value);
}

/**
 * An AS entry's value from a body: `asn` (a number) or `as_set` (a name), at most one; on
 * create exactly one. The CSV's one column takes either (normaliseAsnOrSet).
 */
function asBodyValue(input: EntryInputOf["as"], required: boolean): number | string | undefined {
  if (input.asn !== undefined && input.as_set !== undefined) {
    throw new ValidationError("give asn or as_set, not both", [{ path: "body.as_set", message: "an AS entry holds an ASN or an AS-SET, not both" }]);
  }
  if (input.as_set !== undefined) {
    const set = normaliseAsSet(input.as_set);
    if (!set.ok) throw new ValidationError(`as_set: ${set.message}`, [{ path: "body.as_set", message: set.message }]);
    return set.value;
  }
  if (input.asn !== undefined) {
    const asn = normaliseAsn(input.asn);
    if (!asn.ok) throw new ValidationError(`asn: ${asn.message}`, [{ path: "body.asn", message: asn.message }]);
    return asn.value;
  }
  if (required) throw new ValidationError("asn or as_set is required", [{ path: "body.asn", message: "give an ASN (asn) or an AS-SET (as_set)" }]);
  return undefined;
}

/** Sets an AS row's asn or as_set from a value of either kind, clearing the other. */
const asColumns = (value: number | string) => (typeof value === "number" ? { asn: value, as_set: null } : { asn: null, as_set: value });

function checkModuleType(kind: EntryKind, module: ModuleRow) {
  const want = ENTRY_KINDS[kind].moduleType;
  if (module.type !== want) {
    throw new ValidationError(`module ${module.name} is ${module.type}: ${ENTRY_KINDS[kind].label}s belong to ${want} modules`, [
      { path: "params.module_id", message: `the module is ${module.type}, not ${want}` },
    ]);
  }
}

function normalised(kind: EntryKind, value: number | string): string | number {
  const field = ENTRY_KINDS[kind].field;
  const result = normaliseEntryValue(kind, value);
  if (!result.ok) throw new ValidationError(`${field}: ${result.message}`, [{ path: `body.${field}`, message: result.message }]);
  return result.value;
}

const duplicate = (kind: EntryKind, module: ModuleRow, value: string | number) =>
  new ConflictError(`${display(kind, value)} is already in module ${module.name}`);

async function insertRow(tx: Db, kind: EntryKind, row: EntryRowOf[EntryKind]): Promise<boolean> {
  if (kind === "as") return insertAsEntry(tx, row as AsEntryRow);
  if (kind === "domain") return insertDomainEntry(tx, row as DomainEntryRow);
  if (kind === "country") return insertCountryEntry(tx, row as CountryEntryRow);
  return insertIpRangeEntry(tx, row as IpRangeEntryRow);
}

async function updateRow(tx: Db, kind: EntryKind, row: EntryRowOf[EntryKind]): Promise<void> {
  if (kind === "as") return updateAsEntry(tx, row as AsEntryRow);
  if (kind === "domain") return updateDomainEntry(tx, row as DomainEntryRow);
  if (kind === "country") return updateCountryEntry(tx, row as CountryEntryRow);
  return updateIpRangeEntry(tx, row as IpRangeEntryRow);
}

const AUDITED = ["asn", "as_set", "domain", "include_subdomains", "cidr", "country", "comment"] as const;
const auditView = (row: EntryRowOf[EntryKind]) => {
  const r = row as unknown as Record<string, unknown>;
  return Object.fromEntries(AUDITED.filter((k) => k in r).map((k) => [k, k === "asn" && r[k] !== null ? Number(r[k]) : r[k]])) as Record<
    (typeof AUDITED)[number],
    unknown
  >;
};

export function createEntryService(deps: { sql: Db; audit: AuditWriter }) {
  const { audit } = deps;

  const mustFind = async <K extends EntryKind>(db: Db, kind: K, module: ModuleRow, id: string, forUpdate = false) => {
    const row = await findEntryById(db, kind, module.tenant_id, module.id, id, forUpdate);
    if (!row) throw new NotFoundError(ENTRY_KINDS[kind].label, id);
    return row;
  };

  return {
    async create<K extends EntryKind>(tx: Db, ctx: RequestContext, kind: K, moduleId: string, body: EntryInputOf[K]): Promise<EntryOf[K]> {
      const module = await mustFindModule(tx, ctx.principal.tenantId, moduleId);
      checkModuleType(kind, module);
      const input = body as AnyEntryInput;
      const value = kind === "as" ? asBodyValue(input, true)! : normalised(kind, rawValue(kind, input)!);
      const common = {
        id: uuidv7(),
        tenant_id: module.tenant_id,
        module_id: module.id,
        comment: input.comment ?? "",
        created_at: ctx.now,
        updated_at: ctx.now,
      };
      const row = (
        kind === "as"
          ? { ...common, ...asColumns(value) }
          : kind === "domain"
            ? { ...common, domain: value, include_subdomains: input.include_subdomains ?? false }
            : { ...common, [ENTRY_KINDS[kind].field]: value }
      ) as EntryRowOf[K];
      let inserted: boolean;
      try {
        inserted = await insertRow(tx, kind, row);
      } catch (err) {
        // The module was deleted between the lookup and the insert.
        throw isForeignKeyViolation(err) ? new NotFoundError("module", moduleId) : err;
      }
      if (!inserted) throw duplicate(kind, module, value);
      await audit.record(tx, ctx, {
        action: "create",
        resource_type: ENTRY_KINDS[kind].resource,
        resource_id: row.id,
        summary: `${display(kind, value)} added to module ${module.name}`,
        changes: changesOf(null, auditView(row), AUDITED),
      });
      return toEntry(kind, row);
    },

    async list<K extends EntryKind>(
      ctx: RequestContext,
      kind: K,
      moduleId: string,
      q: { cursor?: string | undefined; limit: number },
    ): Promise<Page<EntryOf[K]>> {
      const module = await mustFindModule(deps.sql, ctx.principal.tenantId, moduleId);
      const afterId = afterIdOf(q.cursor);
      const rows = await listEntries(deps.sql, kind, module.tenant_id, module.id, { afterId, limit: q.limit });
      return toPage(
        rows,
        q.limit,
        (r) => [r.id],
        (r) => toEntry(kind, r),
      );
    },

    async get<K extends EntryKind>(ctx: RequestContext, kind: K, moduleId: string, id: string): Promise<EntryOf[K]> {
      const module = await mustFindModule(deps.sql, ctx.principal.tenantId, moduleId);
      return toEntry(kind, await mustFind(deps.sql, kind, module, id));
    },

    async update<K extends EntryKind>(tx: Db, ctx: RequestContext, kind: K, moduleId: string, id: string, body: EntryInputOf[K]): Promise<EntryOf[K]> {
      const module = await mustFindModule(tx, ctx.principal.tenantId, moduleId);
      const before = await mustFind(tx, kind, module, id, true);
      const input = body as AnyEntryInput;
      const raw = kind === "as" ? asBodyValue(input, false) : rawValue(kind, input);
      const value = raw === undefined ? entryValue(kind, before) : kind === "as" ? raw : normalised(kind, raw);
      const after = { ...before, comment: input.comment ?? before.comment, updated_at: ctx.now } as Record<string, unknown>;
      if (kind === "as") Object.assign(after, asColumns(value));
      else after[ENTRY_KINDS[kind].field] = value;
      if (kind === "domain" && input.include_subdomains !== undefined) after.include_subdomains = input.include_subdomains;
      const row = after as unknown as EntryRowOf[K];
      const changes = changesOf(auditView(before), auditView(row), AUDITED);
      if (Object.keys(changes).length === 0) return toEntry(kind, before);
      try {
        await updateRow(tx, kind, row);
      } catch (err) {
        throw isUniqueViolation(err) ? duplicate(kind, module, value) : err;
      }
      await audit.record(tx, ctx, {
        action: "update",
        resource_type: ENTRY_KINDS[kind].resource,
        resource_id: id,
        summary: `${display(kind, value)} in module ${module.name} updated`,
        changes,
      });
      return toEntry(kind, row);
    },

    async remove(tx: Db, ctx: RequestContext, kind: EntryKind, moduleId: string, id: string): Promise<void> {
      const module = await mustFindModule(tx, ctx.principal.tenantId, moduleId);
      const before = await mustFind(tx, kind, module, id, true);
      await deleteEntry(tx, kind, module.tenant_id, module.id, id);
      await audit.record(tx, ctx, {
        action: "delete",
        resource_type: ENTRY_KINDS[kind].resource,
        resource_id: id,
        summary: `${display(kind, entryValue(kind, before))} removed from module ${module.name}`,
        changes: changesOf(auditView(before), null, AUDITED),
      });
    },
  };
}

export type EntryService = ReturnType<typeof createEntryService>;
