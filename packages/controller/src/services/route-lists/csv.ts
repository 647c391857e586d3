import { ValidationError } from "@rlc/shared/errors";
import type { CsvImportResult, CsvRowError } from "@rlc/shared/schemas";
import type { Db } from "../../db/connect.js";
import { type EntryKind, listEntriesForExport } from "../../db/entries.js";
import {
  countImportChanges,
  createImportStage,
  deleteUnstagedEntries,
  type ImportColumns,
  insertStagedEntries,
  type StagedRows,
  stageImportRows,
  updateStagedEntries,
} from "../../db/entries-import.js";
import type { ModuleRow } from "../../db/modules.js";
import { csvRow, isBadRecord, looksLikeFormula, parseCsv, unescapeFormula } from "../../lib/csv.js";
import { uuidv7 } from "../../lib/ids.js";
import type { AuditWriter } from "../access/audit.js";
import type { RequestContext } from "../access/context.js";
import { ENTRY_KINDS, kindOfModule, normaliseEntryValue } from "./entries.js";
import { mustFindModule } from "./modules.js";

// CSV export and import of a module's entries: the import is all or nothing.

/** Header of each entry kind; the first column is required, the others optional on import. */
export const CSV_COLUMNS: Record<EntryKind, readonly string[]> = {
  as: ["asn", "comment"],
  domain: ["domain", "include_subdomains", "comment"],
  ip_range: ["cidr", "comment"],
  country: ["country", "comment"],
};

const EXPORT_BATCH = 5000;
const STAGE_BATCH = 20_000;
const MAX_COMMENT = 256;
/**
 * Bad rows listed in the 400 (the rest are counted in `error_count`): a 60 MB file of junk
 * answered a 35 MB error body when every row was listed.
 */
const MAX_LISTED_ERRORS = 100;
/**
 * How long the parse runs before it lets the event loop turn. A 196k-row file parsed in one go
 * held the loop for seconds and every other request (health checks included) with it.
 */
const PARSE_SLICE_MS = 10;
const CHECK_EVERY = 256;
const BOOLEANS: Record<string, boolean> = { "": false, true: true, false: false, "1": true, "0": false, yes: true, no: false };

export interface CsvExport {
  module: ModuleRow;
  /** Header, then rows in batches read by keyset: memory stays flat whatever the size. */
  chunks: AsyncGenerator<string>;
}

export interface CsvImportOptions {
  mode: "merge" | "replace";
  dryRun: boolean;
}

export interface ParsedFile {
  rows: StagedRows;
  columns: ImportColumns;
  errors: CsvRowError[];
  errorCount: number;
}

const rowError = (line: number, value: string, message: string): CsvRowError => ({ path: `line.${line}`, line, value: value.slice(0, 200), message });

/** A parsed, checked file, ready for the import's transaction. */
export interface PreparedImport {
  moduleId: string;
  parsed: ParsedFile;
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Reads and checks every row; nothing touches the database until the whole file is good. The
 * work is cut in slices of `sliceMs` (10 ms) between which other requests run; `Infinity`
 * parses in one go.
 */
export async function parseEntryCsv(kind: EntryKind, text: string, opts: { sliceMs?: number } = {}): Promise<ParsedFile> {
  const sliceMs = opts.sliceMs ?? PARSE_SLICE_MS;
  let sliceStart = performance.now();
  let sinceCheck = 0;
  const expected = CSV_COLUMNS[kind];
  const rows: StagedRows = { ids: [], values: [], comments: [], flags: [] };
  const errors: CsvRowError[] = [];
  let errorCount = 0;
  const fail = (e: CsvRowError) => {
    errorCount++;
    if (errors.length < MAX_LISTED_ERRORS) errors.push(e);
  };
  const seen = new Map<string, number>();
  let header: { line: number; at: Record<string, number>; width: number } | null = null;
  let columns: ImportColumns = { comment: false, flag: false };

  for (const record of parseCsv(text)) {
    if (++sinceCheck === CHECK_EVERY) {
      sinceCheck = 0;
      if (performance.now() - sliceStart >= sliceMs) {
        await nextTurn();
        sliceStart = performance.now();
      }
    }
    if (isBadRecord(record)) {
      fail(rowError(record.line, record.raw, record.message));
      continue;
    }
    if (header === null) {
      const names = record.fields.map((f) => f.trim().toLowerCase());
      const problem =
        names[0] !== expected[0]
          ? `the first column must be ${expected[0]} (header: ${expected.join(",")})`
          : names.find((n) => !expected.includes(n))
            ? `unknown column ${names.find((n) => !expected.includes(n))}; the columns are ${expected.join(",")}`
            : new Set(names).size !== names.length
              ? "a column is named twice"
              : null;
      if (problem) {
        fail(rowError(record.line, record.fields.join(","), problem));
        return { rows, columns, errors, errorCount };
      }
      header = { line: record.line, at: Object.fromEntries(names.map((n, i) => [n, i])), width: names.length };
      columns = { comment: "comment" in header.at, flag: "include_subdomains" in header.at };
      continue;
    }
    const raw = record.fields[0] ?? "";
    if (record.fields.length > header.width) {
      fail(rowError(record.line, raw, `${record.fields.length} fields, but the header has ${header.width}`));
      continue;
    }
    const cell = (name: string) => {
      const i = header!.at[name];
      return i === undefined ? "" : (record.fields[i] ?? "");
    };
    const normal = normaliseEntryValue(kind, raw);
    if (!normal.ok) {
      fail(rowError(record.line, raw, normal.message));
      continue;
    }
    const value = String(normal.value);
    const cellText = cell("comment");
    if (looksLikeFormula(cellText)) {
      fail(
        rowError(
          record.line,
          raw,
          `the comment starts with ${JSON.stringify(cellText[0])}, which a spreadsheet runs as a formula; put a ' in front (as the export does) to keep it as text`,
        ),
      );
      continue;
    }
    const comment = unescapeFormula(cellText);
    if (comment.includes("\0")) {
      fail(rowError(record.line, raw, "the comment contains a NUL character"));
      continue;
    }
    if (comment.length > MAX_COMMENT) {
      fail(rowError(record.line, raw, `the comment is longer than ${MAX_COMMENT} characters`));
      continue;
    }
    const flag = BOOLEANS[cell("include_subdomains").trim().toLowerCase()];
    if (flag === undefined) {
      fail(rowError(record.line, raw, "include_subdomains must be true or false"));
      continue;
    }
    const first = seen.get(value);
    if (first !== undefined) {
      fail(rowError(record.line, raw, `duplicate of line ${first} (${value})`));
      continue;
    }
    seen.set(value, record.line);
    rows.ids.push(uuidv7());
    rows.values.push(value);
    rows.comments.push(comment);
    rows.flags.push(flag);
  }
  if (header === null) fail(rowError(1, "", `the file is empty: a header row is required (${expected.join(",")})`));
  return { rows, columns, errors, errorCount };
}

function slice(rows: StagedRows, from: number, to: number): StagedRows {
  return {
    ids: rows.ids.slice(from, to),
    values: rows.values.slice(from, to),
    comments: rows.comments.slice(from, to),
    flags: rows.flags.slice(from, to),
  };
}

/** `sql` serves the export and an import's preparation (outside the import's transaction); the import runs in the caller's. */
export function createCsvService(deps: { audit: AuditWriter; sql: Db }) {
  const { audit } = deps;

  return {
    /** Finds the module first (404 before any byte is sent), then streams it. */
    async export(ctx: RequestContext, moduleId: string): Promise<CsvExport> {
      const db = deps.sql;
      const module = await mustFindModule(db, ctx.principal.tenantId, moduleId);
      const kind = kindOfModule(module.type);
      async function* chunks(): AsyncGenerator<string> {
        yield csvRow(CSV_COLUMNS[kind]);
        let afterId: string | null = null;
        for (;;) {
          const batch: { id: string }[] = await listEntriesForExport(db, kind, module.tenant_id, module.id, { afterId, limit: EXPORT_BATCH });
          if (batch.length === 0) return;
          let text = "";
          for (const r of batch as unknown as Record<string, unknown>[]) {
            // An AS module's one value column holds the ASN or, for an AS-SET entry, the set's name.
            const value = String(kind === "as" ? (r.asn ?? r.as_set) : r[ENTRY_KINDS[kind].field]);
            text += csvRow(kind === "domain" ? [value, String(r.include_subdomains), String(r.comment)] : [value, String(r.comment)]);
          }
          yield text;
          if (batch.length < EXPORT_BATCH) return;
          afterId = batch[batch.length - 1]!.id;
        }
      }
      return { module, chunks: chunks() };
    },

    /**
     * Parses and checks the file before any transaction opens, so the parse (sliced, see
     * parseEntryCsv) holds no database connection. One bad row answers 400 listing the first
     * 100 bad rows and counting all of them.
     */
    async prepareImport(ctx: RequestContext, moduleId: string, text: string): Promise<PreparedImport> {
      const db = deps.sql;
      const module = await mustFindModule(db, ctx.principal.tenantId, moduleId);
      const parsed = await parseEntryCsv(kindOfModule(module.type), text);
      if (parsed.errorCount > 0) {
        const more = parsed.errorCount > parsed.errors.length ? ` (the first ${parsed.errors.length} are listed)` : "";
        throw new ValidationError(`${parsed.errorCount} bad row${parsed.errorCount === 1 ? "" : "s"}; nothing was changed${more}`, parsed.errors, {
          error_count: parsed.errorCount,
        });
      }
      return { moduleId: module.id, parsed };
    },

    /**
     * All or nothing. `merge` adds new values and updates the optional columns the file has;
     * `replace` also deletes the values the file lacks. A column the file leaves out is kept as
     * it is. A module's type never changes, so the file parsed for it still fits.
     */
    async import(tx: Db, ctx: RequestContext, prepared: PreparedImport, opts: CsvImportOptions): Promise<CsvImportResult> {
      const module = await mustFindModule(tx, ctx.principal.tenantId, prepared.moduleId, true);
      const kind = kindOfModule(module.type);
      const { parsed } = prepared;
      await createImportStage(tx);
      const total = parsed.rows.ids.length;
      for (let from = 0; from < total; from += STAGE_BATCH) await stageImportRows(tx, slice(parsed.rows, from, from + STAGE_BATCH));
      const counts = await countImportChanges(tx, kind, module.tenant_id, module.id, parsed.columns);
      const result: CsvImportResult = { ...counts, deleted: opts.mode === "replace" ? counts.deleted : 0, errors: [] };
      if (opts.dryRun) return result;

      if (opts.mode === "replace" && result.deleted > 0) await deleteUnstagedEntries(tx, kind, module.tenant_id, module.id);
      if (result.updated > 0) await updateStagedEntries(tx, kind, module.tenant_id, module.id, parsed.columns, ctx.now);
      if (result.created > 0) await insertStagedEntries(tx, kind, module.tenant_id, module.id, ctx.now);
      if (result.created + result.updated + result.deleted > 0) {
        await audit.record(tx, ctx, {
          action: "update",
          resource_type: ENTRY_KINDS[kind].resource,
          resource_id: module.id,
          summary: `CSV import (${opts.mode}) into module ${module.name}: ${result.created} created, ${result.updated} updated, ${result.deleted} deleted, ${result.unchanged} unchanged`,
          changes: {
            created: { from: null, to: result.created },
            updated: { from: null, to: result.updated },
            deleted: { from: null, to: result.deleted },
          },
        });
      }
      return result;
    },
  };
}

export type CsvService = ReturnType<typeof createCsvService>;
