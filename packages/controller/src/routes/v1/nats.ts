import { NatsMonitoringCredentials, NatsMonitoringCredentialsBody } from "@rlc/shared/schemas";
import { admin } from "../access.js";
import { problems, writeProblems } from "../responses.js";
import type { RoutePlugin } from "../route-file.js";

const natsRoutes: RoutePlugin = async (app, { deps }) => {
  app.post(
    "/v1/nats/monitoring-credentials",
    {
      schema: {
        tags: ["nats"],
        summary: "Issue read-only NATS credentials for a dashboard (admin)",
        description:
          "A NATS user that may read the calling tenant's events (`rl.v1.<tenant_id>.>`, described at /v1/asyncapi.json), live and " +
          "from the tenant's JetStream stream (`stream`; connect with `inbox_prefix` to read it), and publish nothing else; it expires after `ttl_days`. " +
          "The answer's `creds` is a `.creds` file for `nats --creds`, shown once. " +
          "The user lives in the tenant's own NATS account (`account`): nothing it names, a consumer's deliver subject or a request's reply " +
          "subject included, reaches another tenant. No single user is revoked before it expires (the server trusts the account's signing key, " +
          "not a list of users): keep `ttl_days` short (deploy/nats/README.md says how to cut users off). " +
          "503 `nats_credentials_unavailable` when the controller mints no NATS users (NATS_OPERATOR_SEED_FILE and NATS_SYSTEM_CREDS_FILE unset).",
        body: NatsMonitoringCredentialsBody,
        response: { 201: NatsMonitoringCredentials, ...writeProblems, ...problems(503) },
      },
      config: admin,
    },
    async (req, reply) =>
      req.mutate(reply, async (tx, ctx) => ({ status: 201, body: await deps.services.natsCredentials.monitoring(tx, ctx, req.body.ttl_days) })),
  );
};

export default natsRoutes;
