import { gzipSync } from "node:zlib";
import { ApplyBody, BundleParams, EnrollBody, EnrollResult, JobAccepted, LatestRevision, SignedBundle, SigningKey, SigningKeyList, SpeakerParams, StatusReport } from "@rlc/shared/schemas";
import { ValidationError } from "@rlc/shared/errors";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import type { AppDeps } from "../../app.js";
import { startApply } from "../../services/deploy.js";
import { authProblems, problems, writeProblems } from "../responses.js";

const tags = ["nodes"];
/** Node keys of the speaker itself, or operators of the tenant. */
const nodeOrOperator = { node: true, role: "operator" as const };

const nodeRoutes: FastifyPluginAsyncZod<{ deps: AppDeps }> = async (app, { deps }) => {
  const node = deps.services.node;

  app.post(
    "/v1/nodes/enroll",
    {
      schema: {
        tags,
        summary: "Enroll an agent: spend a one-time enrollment token (Bearer) for a node key",
        security: [{ bearer: [] }],
        body: EnrollBody,
        response: { 201: EnrollResult, ...problems(400, 401) },
      },
      config: { auth: "public" },
    },
    async (req, reply) => {
      reply.code(201);
      return node.enroll(req.headers.authorization, req.body, deps.clock());
    },
  );

  app.get(
    "/v1/nodes/signing-keys",
    { schema: { tags, summary: "The public keys that verify bundle signatures (any key)", response: { 200: SigningKeyList, ...problems(401) } }, config: { auth: "any" } },
    async () => deps.services.signing.list(),
  );

  app.post(
    "/v1/nodes/signing-keys/rotate",
    {
      schema: {
        tags,
        summary: "Rotate the bundle signing key (admin+)",
        description: "The new key comes with a `statement` signed by the old and the new key; the old key is retired, stays listed and signs nothing more.",
        response: { 201: SigningKey, ...writeProblems },
      },
      config: { role: "admin" },
    },
    async (req, reply) => req.mutate(reply, async (tx, ctx) => ({ status: 201, body: await deps.services.signing.rotate(tx, ctx) })),
  );

  app.get(
    "/v1/speakers/:speaker_id/revisions/latest",
    { schema: { tags, summary: "The speaker's desired revision and its bundle (node key of that speaker)", params: SpeakerParams, response: { 200: LatestRevision, ...authProblems, ...problems(404) } }, config: nodeOrOperator },
    async (req) => node.latest(deps.sql, req.principal!, req.params.speaker_id),
  );

  app.get(
    "/v1/speakers/:speaker_id/bundle/:revision_id",
    {
      schema: {
        tags,
        summary: "The signed bundle of a revision for the speaker (`Accept-Encoding: gzip` honoured)",
        params: BundleParams,
        response: { 200: SignedBundle, ...authProblems, ...problems(404) },
      },
      config: nodeOrOperator,
    },
    async (req, reply) => {
      const bytes = await node.bundle(deps.sql, req.principal!, req.params.speaker_id, req.params.revision_id);
      reply.type("application/json");
      if (/\bgzip\b/.test(String(req.headers["accept-encoding"] ?? ""))) {
        reply.header("content-encoding", "gzip");
        return reply.send(gzipSync(bytes, { level: 1 }) as never);
      }
      return reply.send(bytes as never); // the stored bytes, as signed: never re-serialised
    },
  );

  app.post(
    "/v1/speakers/:speaker_id/status",
    {
      schema: {
        tags,
        summary: "The agent's status report (HTTP fallback of gRPC ReportStatus)",
        params: SpeakerParams,
        body: StatusReport,
        response: { 204: z.undefined(), ...writeProblems, ...problems(404) },
      },
      config: nodeOrOperator,
    },
    async (req, reply) => {
      // Another tenant's (or speaker's) id is a 404 before anything about the body is said.
      await node.speakerFor(deps.sql, req.principal!, req.params.speaker_id);
      if (req.body.speaker_id !== req.params.speaker_id) {
        throw new ValidationError("speaker_id in the body differs from the path", [{ path: "body.speaker_id", message: "must equal the path's speaker_id" }]);
      }
      await node.report(req.principal!, req.params.speaker_id, req.body as never, deps.clock());
      return reply.code(204).send();
    },
  );

  app.post(
    "/v1/apply",
    {
      schema: {
        tags: ["deploy"],
        summary: "Apply a revision (default: the current one) to speakers (default: all)",
        description:
          "Answers 202 with an `apply` job. The job sets the speakers' desired revision, signs a bundle per speaker, wakes the agents and then waits for their reports " +
          "as `awaiting`, holding no worker (`timeout_seconds`, default 120); it succeeds when every speaker reports the revision applied, and fails with `apply_failed` listing each speaker's outcome. " +
          "Re-applying what a speaker already runs (same revision, same content) completes for it at once. " +
          "An offline speaker keeps its desired revision and applies it when its agent connects. 429 `too_many_jobs` when the tenant's job queue is full.",
        body: ApplyBody,
        response: { 202: JobAccepted, ...writeProblems, ...problems(404, 429) },
      },
      config: { role: "operator" },
    },
    async (req, reply) =>
      req.mutate(reply, async (tx, ctx) => {
        const job = await startApply(tx, { tenantId: ctx.principal.tenantId, now: ctx.now, afterCommit: ctx.afterCommit }, { audit: deps.services.audit, bus: deps.bus }, req.body, `key:${ctx.principal.keyPrefix}`);
        return { status: 202, body: { job_id: job.id, type: job.type, status: job.status }, headers: { location: `/v1/jobs/${job.id}` } };
      }),
  );
};

export default nodeRoutes;
