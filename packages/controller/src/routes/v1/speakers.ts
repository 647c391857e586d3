import {
  CreatedSpeaker,
  CreateSpeakerBody,
  EnrollmentToken,
  JobAccepted,
  LiveSpeakerPoll,
  page,
  SessionHistoryEntry,
  SessionHistoryQuery,
  Speaker,
  SpeakerApplyBody,
  SpeakerDeleteQuery,
  SpeakerListQuery,
  SpeakerParams,
  UpdateSpeakerBody,
  Uuid,
} from "@rlc/shared/schemas";
import { z } from "zod";
import { admin, operator } from "../access.js";
import { resource, resourceRoutes } from "../resource-routes.js";
import { authProblems, jobAccepted, problems, writeProblems } from "../responses.js";
import { routeFile } from "../route-file.js";

const speakerRoutes = routeFile(["speakers"], "speakers", async (app, speakers, { deps, tags }) => {
  app.get(
    "/v1/speakers",
    {
      schema: {
        tags,
        summary: "List speakers; `live=true` polls their agents",
        description:
          "With `live=true` every listed speaker's agent is asked for a fresh report in parallel; the answer waits at most `live_timeout_ms` " +
          "(default 2000, max 10000), adds `live` to each speaker and `polls` beside `items`; speakers that did not answer are `stale` with their last report.",
        querystring: SpeakerListQuery,
        response: {
          200: z.object({ items: z.array(Speaker), next_cursor: z.string().nullable(), has_more: z.boolean(), polls: z.array(LiveSpeakerPoll).optional() }),
          ...authProblems,
        },
      },
    },
    async (req) => deps.services.livePolls.list(req.ctx(), req.query),
  );

  // The list (above) polls the agents; the other standard routes are the helper's.
  resourceRoutes(
    app,
    resource({
      tags,
      path: "/v1/speakers",
      id: "speaker_id",
      params: SpeakerParams,
      one: "a speaker",
      many: "speakers",
      item: Speaker,
      // `force=true` deletes a speaker that peers still name.
      service: { ...speakers, remove: (tx, ctx, id, query: { force: boolean }) => speakers.remove(tx, ctx, id, query.force) },
      writeConfig: operator,
      create: {
        summary: "Create a speaker (remote ones get a one-time enrollment token when an admin creates them)",
        description:
          "An enrollment token becomes the speaker's node key, which receives the signed bundles and the peers' passwords in them, so tokens are " +
          "the admin role's: a remote speaker created by an admin or superadmin answers its token; one created by an operator answers " +
          "`enrollment_token: null` and an admin issues the token with `POST /v1/speakers/{speaker_id}/enrollment-token`.",
        body: CreateSpeakerBody,
        response: CreatedSpeaker,
      },
      read: {},
      update: { body: UpdateSpeakerBody },
      remove: {
        description:
          "Refused with 409 while peers name the speaker, unless `force=true`; revokes the speaker's node keys, so a speaker that holds a live " +
          "node key (an enrolled router) is deleted from the admin role up: an operator gets 403 `forbidden`.",
        querystring: SpeakerDeleteQuery,
      },
    }),
  );

  app.get(
    "/v1/speakers/:speaker_id/sessions/history",
    {
      schema: {
        tags,
        summary: "The history of the speaker's BGP sessions: each state change its status reports showed",
        description:
          "Oldest first, `since`/`until` narrowing the time, paged with `cursor`. A change is kept as the controller receives the report that " +
          "shows it (a session whose state or BGP state differs from the speaker's previous report, or that appeared or went away); the same " +
          "change is published as the `speakers.<id>.session` event. Changes are kept 30 days: older ones are deleted as newer ones are written, " +
          "and a deleted speaker's history goes with it.",
        params: SpeakerParams,
        querystring: SessionHistoryQuery,
        response: { 200: page(SessionHistoryEntry), ...authProblems, ...problems(404) },
      },
    },
    async (req) => deps.services.sessionHistory.list(req.ctx(), req.params.speaker_id, req.query),
  );

  app.post(
    "/v1/speakers/:speaker_id/enrollment-token",
    {
      schema: {
        tags,
        summary: "Issue a new one-time enrollment token (24 h; admin+)",
        description:
          "The token enrolls an agent for the speaker's node key (enrolling again revokes the earlier node keys, and issuing a token expires the " +
          "speaker's older unused ones): it hands out the router's identity, so it is the admin role's.",
        params: SpeakerParams,
        response: { 201: EnrollmentToken, ...writeProblems, ...problems(404) },
      },
      config: admin,
    },
    async (req, reply) => req.mutate(reply, async (tx, ctx) => ({ status: 201, body: await speakers.enrollmentToken(tx, ctx, req.params.speaker_id) })),
  );

  app.post(
    "/v1/speakers/:id/apply",
    {
      schema: {
        tags,
        summary: "Apply a revision (default: the current one) to this speaker",
        params: z.strictObject({ id: Uuid }),
        body: SpeakerApplyBody,
        response: { 202: JobAccepted, ...writeProblems, ...problems(404, 429) },
      },
      config: operator,
    },
    async (req, reply) =>
      req.mutate(reply, async (tx, ctx) => {
        return jobAccepted(await deps.services.deploy.applyToSpeaker(tx, ctx, req.params.id, req.body));
      }),
  );
});

export default speakerRoutes;
