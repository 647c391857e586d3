import { AuditListQuery, AuditRecord, page } from "@rlc/shared/schemas";
import { MONITORING_READ } from "../../services/access/context.js";
import { authProblems } from "../responses.js";
import type { RoutePlugin } from "../route-file.js";

const auditRoutes: RoutePlugin = async (app, { deps }) => {
  app.get(
    "/v1/audit",
    {
      schema: {
        tags: ["audit"],
        summary: "The CRUD audit journal (permission bgp:monitoring:read)",
        querystring: AuditListQuery,
        response: { 200: page(AuditRecord), ...authProblems },
      },
      config: { permission: MONITORING_READ },
    },
    async (req) => deps.services.auditLog.list(req.ctx(), req.query),
  );
};

export default auditRoutes;
