import {
  AutoEstimate,
  AutoRunQuery,
  AutoRunResult,
  CleanupAuditQuery,
  CleanupAuditRecord,
  LogCleanupQuery,
  LogFileList,
  LogFileParams,
  LogTail,
  LogTailQuery,
  page,
} from "@rlc/shared/schemas";
import { deploymentOperator, deploymentViewer } from "../access.js";
import { authProblems, problems, unavailable, writeProblems } from "../responses.js";
import { routeFile } from "../route-file.js";

const runtimeLogRoutes = routeFile(["runtime-logs"], "runtimeLogs", async (app, logs, { tags }) => {
  app.get(
    "/v1/runtime-logs/files",
    {
      schema: { tags, summary: "List *.log files (name, size, mtime)", response: { 200: LogFileList, ...authProblems, ...unavailable } },
      config: deploymentViewer,
    },
    async () => logs.list(),
  );

  app.get(
    "/v1/runtime-logs/files/:filename",
    {
      schema: {
        tags,
        summary: "Tail of a log file",
        description: "Read from the end of the file in blocks; `grep` is a literal substring. With `Accept: text/plain` the answer is the raw text.",
        params: LogFileParams,
        querystring: LogTailQuery,
        response: { 200: LogTail, ...authProblems, ...problems(404), ...unavailable },
      },
      config: deploymentViewer,
    },
    async (req, reply) => {
      const tail = await logs.tail(req.params.filename, req.query);
      if (req.headers.accept?.includes("text/plain") && !req.headers.accept.includes("application/json")) {
        const text = tail.lines.length ? `${tail.lines.join("\n")}\n` : "";
        return reply
          .type("text/plain; charset=utf-8")
          .serializer(String)
          .send(text as never);
      }
      return tail;
    },
  );

  app.delete(
    "/v1/runtime-logs/files/:filename",
    {
      schema: {
        tags,
        summary: "Clean up a log file now (truncate by default, or delete)",
        description: "Files over 512 MiB are refused with 413 `file_too_large`. Answers the cleanup-audit record.",
        params: LogFileParams,
        querystring: LogCleanupQuery,
        response: { 200: CleanupAuditRecord, ...writeProblems, ...problems(404), ...unavailable },
      },
      config: deploymentOperator,
    },
    async (req) => logs.cleanup(req.ctx(), req.params.filename, req.query.mode),
  );

  app.get(
    "/v1/runtime-logs/cleanup-audit",
    {
      schema: {
        tags,
        summary: "Every cleanup, newest first (needs no log directory)",
        querystring: CleanupAuditQuery,
        response: { 200: page(CleanupAuditRecord), ...authProblems },
      },
      config: deploymentViewer,
    },
    async (req) => logs.auditList(req.principal!.tenantId, req.query),
  );

  app.get(
    "/v1/runtime-logs/auto-estimate",
    {
      schema: {
        tags,
        summary: "Files above the tenant's threshold (runtime_logs_auto_threshold_bytes)",
        response: { 200: AutoEstimate, ...authProblems, ...unavailable },
      },
      config: deploymentOperator,
    },
    async (req) => logs.estimate(req.principal!.tenantId),
  );

  app.post(
    "/v1/runtime-logs/auto-run",
    {
      schema: {
        tags,
        summary: "Run the automatic cleanup now (`dry_run=true` simulates it)",
        querystring: AutoRunQuery,
        response: { 200: AutoRunResult, ...writeProblems, ...unavailable },
      },
      config: deploymentOperator,
    },
    async (req) => {
      const ctx = req.ctx();
      return logs.autoRun(ctx.principal.tenantId, ctx.now, { actor: `key:${ctx.principal.keyPrefix}`, actorPrefix: "auto:api" }, req.query.dry_run);
    },
  );
});

export default runtimeLogRoutes;
