import { Readable } from "node:stream";
import { CsvImportQuery, CsvImportResult, ModuleParams } from "@rlc/shared/schemas";
import { z } from "zod";
import { authProblems, problems, writeProblems } from "../responses.js";
import { routeFile } from "../route-file.js";

const CSV_BODY_LIMIT = 64 * 1024 * 1024;

/** A file name made of the module's name, safe inside a quoted Content-Disposition parameter. */
const fileName = (name: string) => `${name.replace(/[^A-Za-z0-9._-]+/g, "_").slice(0, 64) || "entries"}.csv`;

/**
 * CSV export and import of a module's entries. An encapsulated plugin: the JSON parser is replaced by a
 * text/csv one here only, so a JSON body to the import is a 415 rather than a confusing 400.
 */
const csvRoutes = routeFile(["entries"], "csv", async (app, csv, { tags }) => {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(["text/csv", "application/csv"], { parseAs: "string", bodyLimit: CSV_BODY_LIMIT }, (_req, body, done) => done(null, body));

  app.get(
    "/v1/modules/:module_id/entries.csv",
    {
      schema: {
        tags,
        summary: "Export a module's entries as CSV",
        description:
          "RFC 4180 with CRLF line ends; header `asn,comment`, `domain,include_subdomains,comment` or `cidr,comment` by module type. " +
          "Rows in the order they were added; streamed. A cell that starts with `=`, `+`, `-`, `@`, tab or CR (or with `'` and then one " +
          "of these) gets a `'` in front, so a spreadsheet shows it as text instead of running it as a formula; the import removes it.",
        params: ModuleParams,
        response: {
          200: { description: "The entries", content: { "text/csv": { schema: z.string() } } },
          ...authProblems,
          ...problems(404),
        },
      },
    },
    async (req, reply) => {
      const { module, chunks } = await csv.export(req.ctx(), req.params.module_id);
      reply.header("content-type", "text/csv; charset=utf-8").header("content-disposition", `attachment; filename="${fileName(module.name)}"`);
      return reply.send(Readable.from(chunks, { objectMode: false }) as never);
    },
  );

  app.post(
    "/v1/modules/:module_id/entries.csv",
    {
      bodyLimit: CSV_BODY_LIMIT,
      schema: {
        tags,
        summary: "Import a module's entries from CSV",
        description:
          "A `text/csv` body of the export's shape (header required; columns after the first optional), up to 64 MiB. All or nothing: " +
          "one bad row changes nothing and the 400 lists the first 100 bad rows as `{line, value, message}` (the header is line 1) " +
          "and counts them all in `error_count`. A comment that starts with `=`, `+`, `-`, `@`, tab or CR is a bad row (a spreadsheet " +
          "would run it); one the export escaped with a leading `'` is read back without it. " +
          "`merge` adds values and updates the optional columns the file has; `replace` also deletes the values the file lacks. " +
          "A column the file leaves out keeps its value. `dry_run=true` answers the counts and changes nothing.",
        consumes: ["text/csv"],
        params: ModuleParams,
        querystring: CsvImportQuery,
        body: z.string(),
        response: { 200: CsvImportResult, ...writeProblems, ...problems(404) },
      },
    },
    async (req, reply) => {
      const prepared = await csv.prepareImport(req.ctx(), req.params.module_id, req.body);
      return req.mutate(reply, async (tx, ctx) => ({
        status: 200,
        body: await csv.import(tx, ctx, prepared, { mode: req.query.mode ?? "merge", dryRun: req.query.dry_run }),
      }));
    },
  );
});

export default csvRoutes;
