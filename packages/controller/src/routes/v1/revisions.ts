import {
  page,
  Revision,
  RevisionDiff,
  RevisionDiffParams,
  RevisionDiffQuery,
  RevisionListQuery,
  RevisionParams,
  RevisionPrefix,
  RevisionPrefixQuery,
  RevisionPreview,
  RevisionPruneBody,
  RevisionPruneEstimate,
  RevisionPruneResult,
  RollbackBody,
  Uuid,
} from "@rlc/shared/schemas";
import { z } from "zod";
import { operator } from "../access.js";
import { collectionRoutes, resource as declareResource, itemRoutes } from "../resource-routes.js";
import { authProblems, problems, writeProblems } from "../responses.js";
import { routeFile } from "../route-file.js";

const revisionRoutes = routeFile(["revisions"], "revisions", async (app, revisions, { deps, tags }) => {
  const resource = declareResource({
    tags,
    path: "/v1/revisions",
    id: "revision_id",
    params: RevisionParams,
    one: "a revision",
    many: "revisions",
    item: Revision,
    service: revisions,
    list: { summary: "List revisions (newest first)", querystring: RevisionListQuery },
    read: {},
  });
  collectionRoutes(app, resource);

  // Registered before /v1/revisions/:revision_id so "prune" is never read as an id.
  app.get(
    "/v1/revisions/prune/estimate",
    {
      schema: { tags, summary: "Which revisions a prune would delete (revision_retention_minutes)", response: { 200: RevisionPruneEstimate, ...authProblems } },
    },
    async (req) => revisions.estimatePrune(req.ctx()),
  );

  app.post(
    "/v1/revisions/prune",
    {
      schema: {
        tags,
        summary: "Delete revisions older than the retention",
        description: "Never the current revision, nor one a speaker has as desired or applied. `revision_retention_minutes` unset or 0 keeps everything.",
        body: RevisionPruneBody,
        response: { 200: RevisionPruneResult, ...writeProblems },
      },
      config: operator,
    },
    async (req, reply) => req.mutate(reply, async (tx, ctx) => ({ status: 200, body: await revisions.prune(tx, ctx, req.body.dry_run ?? false) })),
  );

  itemRoutes(app, resource);

  app.get(
    "/v1/revisions/:revision_id/prefixes",
    {
      schema: {
        tags,
        summary: "The revision's announced prefixes, sorted by address",
        params: RevisionParams,
        querystring: RevisionPrefixQuery,
        response: { 200: page(RevisionPrefix), ...authProblems, ...problems(404) },
      },
    },
    async (req) => revisions.prefixes(req.ctx(), req.params.revision_id, req.query),
  );

  app.get(
    "/v1/revisions/:revision_id/preview",
    {
      schema: {
        tags,
        summary: "What a speaker will receive: counts by community and the first 200 lines of the BIRD configuration",
        params: RevisionParams,
        description:
          "`speaker_id` renders for that speaker (its peers, addresses and ASN) instead of a speaker with no peers, and for the BIRD version it last " +
          "reported (`bird_version`; without one, what every supported version accepts). Peer passwords render as " +
          '`password "********";`: only the speaker\'s own bundle carries them. A speaker whose peers cannot be rendered answers 409 naming the field.',
        querystring: z.strictObject({ speaker_id: Uuid.optional() }),
        response: { 200: RevisionPreview, ...authProblems, ...problems(404, 409) },
      },
    },
    async (req) => revisions.preview(req.ctx(), req.params.revision_id, req.query.speaker_id),
  );

  app.get(
    "/v1/revisions/:revision_a/diff/:revision_b",
    {
      schema: {
        tags,
        summary: "Prefixes added, removed and with changed communities from revision a to revision b",
        params: RevisionDiffParams,
        querystring: RevisionDiffQuery,
        response: { 200: RevisionDiff, ...authProblems, ...problems(404) },
      },
    },
    async (req) => revisions.diff(req.ctx(), req.params.revision_a, req.params.revision_b, req.query.limit),
  );

  app.post(
    "/v1/revisions/:revision_id/rollback",
    {
      schema: {
        tags,
        summary: "Make a new revision with this revision's content; it becomes current",
        description: "With `apply: true` the new revision is also applied to every speaker and the answer carries `apply_job_id`.",
        params: RevisionParams,
        body: RollbackBody,
        response: { 201: Revision.extend({ apply_job_id: z.string().optional() }), ...writeProblems, ...problems(404, 429) },
      },
      config: operator,
    },
    async (req, reply) =>
      req.mutate(reply, async (tx, ctx) => {
        const revision = await revisions.rollback(tx, ctx, req.params.revision_id);
        let applyJobId: string | undefined;
        if (req.body.apply) {
          const job = await deps.services.deploy.apply(tx, ctx, { revision_id: revision.revision_id });
          applyJobId = job.id;
        }
        const body = applyJobId ? { ...revision, apply_job_id: applyJobId } : revision;
        return { status: 201, body, headers: { location: `/v1/revisions/${revision.revision_id}` } };
      }),
  );
});

export default revisionRoutes;
