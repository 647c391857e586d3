import { EVENTS, SessionState } from "@rlc/proto";
import { z } from "zod";

const idOf = (schema: z.ZodType): string => {
  const id = z.globalRegistry.get(schema)?.id;
  if (!id) throw new Error("every event schema names its id in .meta()");
  return id;
};

/** The payload schemas as JSON Schema (draft 7, what AsyncAPI schemas extend), referring to each other under components. */
function payloadSchemas(): Record<string, Record<string, unknown>> {
  const registry = z.registry<{ id: string }>();
  for (const e of Object.values(EVENTS)) registry.add(e.schema, { id: idOf(e.schema) });
  registry.add(SessionState, { id: idOf(SessionState) });
  const { schemas } = z.toJSONSchema(registry, { target: "draft-7", uri: (id) => `#/components/schemas/${id}` });
  return Object.fromEntries(Object.entries(schemas).map(([id, { $schema: _s, $id: _i, ...schema }]) => [id, schema]));
}

/**
 * The AsyncAPI 3.0 document of the events (`GET /v1/asyncapi.json`), generated from the zod
 * schemas the controller publishes with. It describes subjects and payloads only: no server
 * address, no credentials.
 */
export function asyncApiDocument(o: { version: string }) {
  const channels: Record<string, unknown> = {};
  const operations: Record<string, unknown> = {};
  const messages: Record<string, unknown> = {};
  for (const e of Object.values(EVENTS)) {
    const id = idOf(e.schema);
    messages[id] = {
      name: e.kind,
      title: id,
      summary: e.summary,
      contentType: "application/json",
      payload: { $ref: `#/components/schemas/${id}` },
    };
    channels[e.kind] = {
      address: e.address,
      title: id,
      description: e.summary,
      parameters: Object.fromEntries(Object.entries(e.parameters).map(([name, description]) => [name, { description }])),
      messages: { [id]: { $ref: `#/components/messages/${id}` } },
    };
    operations[`publish_${e.kind}`] = {
      action: "send",
      channel: { $ref: `#/channels/${e.kind}` },
      summary: e.summary,
      messages: [{ $ref: `#/channels/${e.kind}/messages/${id}` }],
    };
  }
  return {
    asyncapi: "3.0.0",
    info: {
      title: "Route-list controller events",
      version: o.version,
      description:
        "What the controller publishes on NATS, per tenant, under `rl.v1.<tenant_id>.…`: agents' status reports, BGP session changes, " +
        "apply outcomes per speaker, new revisions and finished jobs. Each payload is JSON and names its tenant and the time it happened (`at`). " +
        "Versioning: within v1 fields are only added (readers ignore fields they do not know); a change that would break a reader " +
        "gets new `rl.v2.…` subjects. History: with NATS the tenant's JetStream stream `RL_EVENTS_V1_<tenant_id>` keeps its events " +
        "for NATS_EVENTS_MAX_AGE_SECONDS (default one hour); a controller without NATS keeps none. Read-only credentials for a tenant: " +
        "`POST /v1/nats/monitoring-credentials` (connect with the inbox prefix `_INBOX_<tenant_id>` to read the stream).",
    },
    defaultContentType: "application/json",
    servers: {
      nats: {
        host: "{host}",
        protocol: "nats",
        description: "The deployment's NATS (the controller's NATS_URL).",
        variables: { host: { default: "localhost:4222", description: "host:port of a NATS server" } },
      },
    },
    channels,
    operations,
    components: { messages, schemas: payloadSchemas() },
  };
}
