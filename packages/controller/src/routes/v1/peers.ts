import { CreatePeerBody, IdParams, Peer, PeerDeleted, PeerListQuery, PeerWithJob, page, UpdatePeerBody } from "@rlc/shared/schemas";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { AppDeps } from "../../app-deps.js";
import { authProblems, problems, writeProblems } from "../responses.js";

const tags = ["peers"];
const operator = { role: "operator" as const };
const reconcileNote =
  " Every write enqueues a `peer_reconcile` job (no ingest, no collection) that then queues an `apply` for the affected speakers; its id is `reconcile_job_id`. A tenant whose job queue is full gets 429 `too_many_jobs` and nothing is written.";

const peerRoutes: FastifyPluginAsyncZod<{ deps: AppDeps }> = async (app, { deps }) => {
  const peers = deps.services.peers;

  app.get(
    "/v1/peers",
    {
      schema: {
        tags,
        summary: "List BGP peers with their session state across speakers",
        description: "`session_on_speakers`, `established_on_speakers`, `connected_speaker_*` and `session_mismatch` come from the speakers' last reports.",
        querystring: PeerListQuery,
        response: { 200: page(Peer), ...authProblems },
      },
    },
    async (req) => peers.list(deps.sql, req.ctx(), req.query),
  );

  app.post(
    "/v1/peers",
    {
      schema: {
        tags,
        summary: "Create a peer",
        description: `\`password\` is write-only.${reconcileNote}`,
        body: CreatePeerBody,
        response: { 201: PeerWithJob, ...writeProblems, ...problems(429) },
      },
      config: operator,
    },
    async (req, reply) =>
      req.mutate(reply, async (tx, ctx) => {
        const body = await peers.create(tx, ctx, req.body);
        return { status: 201, body, headers: { location: `/v1/peers/${body.id}` } };
      }),
  );

  app.get(
    "/v1/peers/:id",
    { schema: { tags, summary: "Read a peer", params: IdParams, response: { 200: Peer, ...authProblems, ...problems(404) } } },
    async (req) => peers.get(deps.sql, req.ctx(), req.params.id),
  );

  app.patch(
    "/v1/peers/:id",
    {
      schema: {
        tags,
        summary: "Update a peer",
        description: `\`password: null\` removes it.${reconcileNote}`,
        params: IdParams,
        body: UpdatePeerBody,
        response: { 200: PeerWithJob, ...writeProblems, ...problems(404, 429) },
      },
      config: operator,
    },
    async (req, reply) => req.mutate(reply, async (tx, ctx) => ({ status: 200, body: await peers.update(tx, ctx, req.params.id, req.body) })),
  );

  app.delete(
    "/v1/peers/:id",
    {
      schema: {
        tags,
        summary: "Delete a peer",
        description: reconcileNote.trim(),
        params: IdParams,
        response: { 200: PeerDeleted, ...writeProblems, ...problems(404, 429) },
      },
      config: operator,
    },
    async (req, reply) => req.mutate(reply, async (tx, ctx) => ({ status: 200, body: await peers.remove(tx, ctx, req.params.id) })),
  );
};

export default peerRoutes;
