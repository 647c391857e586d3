import { CreatePeerBody, IdParams, Peer, PeerDeleted, PeerListQuery, PeerWithJob, UpdatePeerBody } from "@rlc/shared/schemas";
import { operator } from "../access.js";
import { resource, resourceRoutes } from "../resource-routes.js";
import type { RoutePlugin } from "../route-file.js";

const reconcileNote =
  " Every write enqueues a `peer_reconcile` job (no ingest, no collection) that then queues an `apply` for the affected speakers; its id is `reconcile_job_id`. A tenant whose job queue is full gets 429 `too_many_jobs` and nothing is written.";

const peerRoutes: RoutePlugin = async (app, { deps }) => {
  resourceRoutes(
    app,
    resource({
      tags: ["peers"],
      path: "/v1/peers",
      id: "id",
      params: IdParams,
      one: "a peer",
      many: "peers",
      item: Peer,
      service: deps.services.peers,
      writeConfig: operator,
      list: {
        summary: "List BGP peers with their session state across speakers",
        description: "`session_on_speakers`, `established_on_speakers`, `connected_speaker_*` and `session_mismatch` come from the speakers' last reports.",
        querystring: PeerListQuery,
      },
      // Writes answer the peer with the id of the reconcile job they enqueued.
      create: { description: `\`password\` is write-only.${reconcileNote}`, body: CreatePeerBody, response: PeerWithJob, problems: [429] },
      read: {},
      update: {
        description:
          "`password: null` removes it. The password is bound to the neighbor it was set for: changing `neighbor_address` without sending " +
          `\`password\` in the same request drops the stored one (\`password_set\` turns false), so it never follows the peer to another router.${reconcileNote}`,
        body: UpdatePeerBody,
        response: PeerWithJob,
        problems: [429],
      },
      remove: { description: reconcileNote.trim(), response: PeerDeleted, problems: [429] },
    }),
  );
};

export default peerRoutes;
