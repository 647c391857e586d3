import { ValidationError } from "@rlc/shared/errors";
import {
  ApplyBody,
  BundleParams,
  BundleQuery,
  EnrollBody,
  EnrollResult,
  JobAccepted,
  LatestRevision,
  SignedBundle,
  SigningKey,
  SigningKeyList,
  SpeakerParams,
  STATUS_REPORT_MAX_BYTES,
  StatusReport,
} from "@rlc/shared/schemas";
import { z } from "zod";
import { BUNDLE_RETRY_AFTER_S } from "../../services/deploy/bundle-downloads.js";
import { ANNOUNCEMENT_HEADERS_TEXT, announcedInHeaders } from "../../services/deploy/served-format.js";
import { admin, operator } from "../access.js";
import { authProblems, jobAccepted, problems, writeProblems } from "../responses.js";
import { routeFile } from "../route-file.js";

/** Node keys of the speaker itself, or operators of the tenant. */
const nodeOrOperator = { node: true, role: "operator" as const };

const nodeRoutes = routeFile(["nodes"], "node", async (app, node, { deps, tags }) => {
  app.post(
    "/v1/nodes/enroll",
    {
      // Anyone may call it (the token is checked in the handler): a few hundred bytes is all it takes.
      bodyLimit: 16 * 1024,
      schema: {
        tags,
        summary: "Enroll an agent: spend a one-time enrollment token (Bearer) for a node key",
        description: ANNOUNCEMENT_HEADERS_TEXT,
        security: [{ bearer: [] }],
        body: EnrollBody,
        response: { 201: EnrollResult, ...problems(400, 401, 413) },
      },
      config: { auth: "public" },
    },
    async (req, reply) => {
      reply.code(201);
      return node.enroll(req.headers.authorization, req.body, req.now(), announcedInHeaders(req.headers));
    },
  );

  app.get(
    "/v1/nodes/signing-keys",
    {
      schema: {
        tags,
        summary: "The public keys that verify the caller's tenant's bundle signatures (any key)",
        description:
          "Each tenant's bundles are signed by its own Ed25519 key: the list holds the tenant's keys (the active one and the retired ones, whose statements " +
          "let an agent follow rotations) and any deployment-wide key: the one `BUNDLE_SIGNING_KEY_FILE` pins for every tenant, or the key all tenants " +
          "shared before keys were per tenant (retired; each tenant's first own key carries a statement signed by it).",
        response: { 200: SigningKeyList, ...problems(401) },
      },
      config: { auth: "any" },
    },
    async (req) => deps.services.signing.list(req.ctx().principal.tenantId),
  );

  app.post(
    "/v1/nodes/signing-keys/rotate",
    {
      schema: {
        tags,
        summary: "Rotate the tenant's bundle signing key (admin+)",
        description:
          "Rotates the caller's tenant's key only; other tenants keep theirs. The new key comes with a `statement` signed by the old and the new key; " +
          "the old key is retired, stays listed and signs nothing more. While `BUNDLE_SIGNING_KEY_FILE` pins one deployment-wide key the answer is 409: " +
          "that key is replaced by changing the file.",
        response: { 201: SigningKey, ...writeProblems },
      },
      config: admin,
    },
    async (req, reply) => req.mutate(reply, async (tx, ctx) => ({ status: 201, body: await deps.services.signing.rotate(tx, ctx) })),
  );

  app.get(
    "/v1/speakers/:speaker_id/revisions/latest",
    {
      schema: {
        tags,
        summary: "The speaker's desired revision and its bundle (node key of that speaker)",
        description:
          "For the speaker's node key the digest is the one its agent knows the bundle by: the one it reported while it runs this very bundle (revision and sequence), " +
          "so that an agent served `rl-bundle/1` (whose digest differs), restarted or upgraded, finds itself up to date.",
        params: SpeakerParams,
        response: { 200: LatestRevision, ...authProblems, ...problems(404) },
      },
      config: nodeOrOperator,
    },
    async (req) => node.latest(req.ctx().principal, req.params.speaker_id),
  );

  app.get(
    "/v1/speakers/:speaker_id/bundle/:revision_id",
    {
      schema: {
        tags,
        summary: "The signed bundle of a revision for the speaker (node key of that speaker; `Accept-Encoding: gzip` honoured)",
        description:
          "A bundle carries the peers' BGP passwords in plain text, so only the speaker's own node key receives it; any other key gets 403 " +
          "(a masked copy would no longer match its signature). Operators see what a bundle renders to with " +
          "`GET /v1/revisions/{revision_id}/preview?speaker_id=`, passwords masked. " +
          "The body is the newest format the agent accepts: an `rl-bundle/2` (`application/octet-stream`: a signed header naming the SHA-256 of the config and of the " +
          "prefix section that follow it; see the agent's README), or the `rl-bundle/1` JSON envelope (for an agent that announces nothing, a controller set to " +
          "`BUNDLE_FORMATS=rl-bundle/1`, or a bundle issued before rl-bundle/2). " +
          `${ANNOUNCEMENT_HEADERS_TEXT} ` +
          "With `base_revision` (the revision the agent runs and holds the prefixes of) and the `delta` capability, a delta from it when the controller issued one: " +
          "the same header with the edit script from that revision's prefixes instead of the whole list; otherwise the full bundle. " +
          "Bundle transfers share the gRPC GetBundle limits (one count for both transports): a node key has at most 2 in flight, and a " +
          "controller serves 64 at once, the next ones waiting in line. A third transfer of one key answers 429 `rate_limited`, and a full line " +
          `503 \`not_ready\`, both with \`Retry-After\` (${BUNDLE_RETRY_AFTER_S.key} s and ${BUNDLE_RETRY_AFTER_S.busy} s): the agent waits and asks again. ` +
          "The body is streamed from storage; compressed, a revision's prefix section is compressed once per controller for every speaker.",
        params: BundleParams,
        querystring: BundleQuery,
        response: { 200: SignedBundle, ...authProblems, ...problems(404, 429, 503) },
      },
      config: nodeOrOperator,
    },
    async (req, reply) => {
      // Another tenant's speaker is a 404 first, as on every route; the tenant's own is a 403 (the node service decides).
      const gone = new Promise<void>((resolve) => reply.raw.once("close", resolve));
      const download = await deps.services.bundleDownloads.open(
        req.ctx().principal,
        req.params.speaker_id,
        req.params.revision_id,
        req.query.base_revision ?? null,
        { gzip: /\bgzip\b/.test(String(req.headers["accept-encoding"] ?? "")), gone, accepts: announcedInHeaders(req.headers) },
      );
      reply.type(download.type).header("vary", "accept-encoding");
      if (download.gzip) reply.header("content-encoding", "gzip");
      if (download.length !== null) reply.header("content-length", download.length);
      // The stored bytes, as signed: never re-serialised.
      return reply.send(download.body as never);
    },
  );

  app.post(
    "/v1/speakers/:speaker_id/status",
    {
      schema: {
        tags,
        summary: "The agent's status report (HTTP fallback of gRPC ReportStatus)",
        description: `Recorded on the speaker (\`GET /v1/speakers\`), with what the agent accepts. ${ANNOUNCEMENT_HEADERS_TEXT}`,
        params: SpeakerParams,
        body: StatusReport,
        response: { 204: z.undefined(), ...writeProblems, ...problems(404) },
      },
      // The report's own cap is on its JSON; twice that leaves room for whitespace, and a body
      // far past it is refused before it is parsed.
      bodyLimit: 2 * STATUS_REPORT_MAX_BYTES,
      config: nodeOrOperator,
    },
    async (req, reply) => {
      // Another tenant's (or speaker's) id is a 404 before anything about the body is said.
      const ctx = req.ctx();
      await node.speakerFor(ctx.principal, req.params.speaker_id);
      if (req.body.speaker_id !== req.params.speaker_id) {
        throw new ValidationError("speaker_id in the body differs from the path", [{ path: "body.speaker_id", message: "must equal the path's speaker_id" }]);
      }
      await node.report(ctx.principal, req.params.speaker_id, req.body as never, ctx.now, announcedInHeaders(req.headers));
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
          "An offline speaker keeps its desired revision and applies it when its agent connects. " +
          "Each agent confirms a reload only after its probation window (`BIRD.confirm_after_seconds`): a configuration that leaves a BGP session down, stops exporting to a session that carried routes, " +
          "or cuts the agent off from the controller is undone and reported with the code `reverted` (the speaker's `last_error` and the job's per-speaker outcome name the failed `check` and the `sessions`). " +
          "`force_confirm: true` skips the session and route checks, for a change meant to take a session down. 429 `too_many_jobs` when the tenant's job queue is full.",
        body: ApplyBody,
        response: { 202: JobAccepted, ...writeProblems, ...problems(404, 429) },
      },
      config: operator,
    },
    async (req, reply) =>
      req.mutate(reply, async (tx, ctx) => {
        return jobAccepted(await deps.services.deploy.apply(tx, ctx, req.body));
      }),
  );
});

export default nodeRoutes;
