import { isIP } from "node:net";
import { z } from "zod";
import { listQuery, optionalBody, optionalFields, queryFlag, Timestamp, timestamps, Uuid } from "./common.js";
import { singleLineText } from "./text.js";

const ipv4 = z.string().refine((v) => isIP(v) === 4, "must be an IPv4 address");
const ipv6 = z.string().refine((v) => isIP(v) === 6, "must be an IPv6 address");
export const Asn = z.number().int().min(1).max(4294967295);

export const SpeakerPolicies = z
  .looseObject({
    local_ip: ipv4.optional(),
    local_ipv6: ipv6.optional(),
    local_asn: Asn.optional(),
    local_port: z.number().int().min(1).max(65535).optional(),
    next_hop_ipv4: ipv4.optional(),
    next_hop_ipv6: ipv6.optional(),
  })
  .meta({ id: "SpeakerPolicies", description: "Local IP and local ASN overrides for the speaker's sessions; further keys are kept." });

export const BgpSessionLive = z
  .object({
    protocol: z.string(),
    peer_id: Uuid.nullable(),
    neighbor_address: z.string().nullable(),
    remote_asn: z.number().int().nullable(),
    state: z.string(),
    bgp_state: z.string().nullable(),
    since: z.string().nullable(),
    routes_imported: z.number().int().nullable(),
    routes_exported: z.number().int().nullable(),
    last_error: z.string().nullable(),
  })
  .meta({ id: "BgpSessionLive" });
export type BgpSessionLive = z.infer<typeof BgpSessionLive>;

// What an agent (or the controller's local speaker) reports, in its JSON form: these types are
// the one definition the agent, the gRPC conversions and the controller share. The report the
// controller accepts (StatusReport below) is looser, so that an older or newer agent is heard.

/** BIRD as `show status` shows it; `reachable: false` with nulls when the socket did not answer. */
export const BirdInfo = z.object({
  reachable: z.boolean(),
  version: z.string().nullable(),
  router_id: z.string().nullable(),
  server_time: z.string().nullable(),
  last_reconfiguration: z.string().nullable(),
});
export type BirdInfo = z.infer<typeof BirdInfo>;

/** A session as a speaker reports it: BIRD's text always gives the route counts (0 when none). */
export const ReportedSession = BgpSessionLive.extend({ routes_imported: z.number().int(), routes_exported: z.number().int() });
export type ReportedSession = z.infer<typeof ReportedSession>;

export const ReportReason = z.enum(["applied", "apply_failed", "live_poll", "sessions_changed", "started"]);
export type ReportReason = z.infer<typeof ReportReason>;

/** Why the last apply failed; `check` and `sessions` only for a probation that reverted. */
export const StatusError = z.object({
  code: z.string(),
  message: z.string(),
  revision_id: z.number().int().nullable(),
  sequence: z.number().int().nullable(),
  at: z.string(),
  check: z.string().nullable().optional(),
  sessions: z.array(z.string()).optional(),
});
export type StatusError = z.infer<typeof StatusError>;

/** A status report as a speaker sends it (the JSON form of agent.proto's ReportStatusRequest). */
export const SentStatusReport = z.object({
  speaker_id: z.string(),
  reason: ReportReason,
  poll_id: z.string().nullable(),
  applied_revision_id: z.number().int().nullable(),
  applied_sequence: z.number().int().nullable(),
  applied_digest: z.string().nullable(),
  applied_at: z.string().nullable(),
  error: StatusError.nullable(),
  bird: BirdInfo,
  sessions: z.array(ReportedSession),
  agent_version: z.string(),
  reported_at: z.string(),
});
export type SentStatusReport = z.infer<typeof SentStatusReport>;

export const SpeakerLiveStatus = z
  .object({
    speaker_id: Uuid,
    reachable: z.boolean(),
    stale: z.boolean(),
    polled_at: Timestamp.nullable(),
    revision_id: z.number().int().nullable(),
    bird: BirdInfo.omit({ reachable: true }).nullable(),
    sessions: z.array(BgpSessionLive),
  })
  .meta({ id: "SpeakerLiveStatus" });

export const LiveSpeakerPoll = z
  .object({
    speaker_id: Uuid,
    requested_at: Timestamp,
    answered_at: Timestamp.nullable(),
    latency_ms: z.number().int().nullable(),
    ok: z.boolean(),
    error: z.string().nullable(),
  })
  .meta({ id: "LiveSpeakerPoll" });

export const Speaker = z
  .object({
    speaker_id: Uuid,
    id: Uuid,
    name: z.string(),
    mode: z.enum(["remote", "local"]),
    hostname: z.string().nullable(),
    router_id: z.string(),
    asn: z.number().int(),
    policies_json: z.record(z.string(), z.unknown()),
    metadata: z.record(z.string(), z.unknown()),
    enrolled_at: Timestamp.nullable(),
    last_seen_at: Timestamp.nullable(),
    agent_version: z.string().nullable(),
    agent_accepts: z
      .object({
        bundle_formats: z.array(z.string()).meta({ description: "Bundle formats the agent reads, newest first (`rl-bundle/2`, `rl-bundle/1`)." }),
        capabilities: z.array(z.string()).meta({ description: "Features it knows (`delta`, `force_confirm`); the controller sends no other." }),
      })
      .nullable()
      .meta({
        description:
          "What the agent announced it accepts at its last enrollment, Watch or status report; null when it announced nothing (an agent of the release before " +
          "announcements, served `rl-bundle/1` and no feature) or has not been heard from.",
      }),
    warnings: z.array(z.object({ code: z.string(), message: z.string() })).meta({
      description:
        "`agent_outdated`: the agent accepts no `rl-bundle/2` (it is served `rl-bundle/1`, without deltas or `force_confirm`): upgrade it. " +
        "`agent_older`: the agent's version is of an older release than the controller's (`GET /version`), by major.minor.patch.",
    }),
    desired_revision_id: z.number().int().nullable(),
    applied_revision_id: z.number().int().nullable(),
    dispatch_status: z.enum(["idle", "pending", "dispatched", "failed"]),
    sync_status: z.enum(["in_sync", "out_of_sync", "unknown", "error"]),
    last_error: z.looseObject({}).nullable(),
    live: SpeakerLiveStatus.optional(),
    ...timestamps,
  })
  .meta({ id: "Speaker" });

export const CreatedSpeaker = Speaker.extend({
  enrollment_token: z
    .string()
    .nullable()
    .describe(
      "One-time token for `rl-agent enroll` (remote speakers), valid 24 h; shown once. `rlt_<secret>.<hex>`: the part after the dot is the SHA-256 of the controller's gRPC CA public key, which the agent pins. Issuing a new token invalidates the speaker's older unused ones. " +
        "Null for a local speaker, and for a speaker an operator created: tokens are issued from the admin role up.",
    ),
  enrollment_token_expires_at: Timestamp.nullable(),
}).meta({ id: "CreatedSpeaker" });

/** What a client may change of a speaker; its mode is fixed when it is created. */
const speakerFields = {
  name: z.string().trim().min(1).max(64),
  router_id: ipv4,
  asn: Asn,
  policies_json: SpeakerPolicies,
  metadata: z.record(z.string(), z.unknown()),
};

export const CreateSpeakerBody = z.strictObject({
  name: speakerFields.name,
  mode: z.enum(["remote", "local"]).default("remote"),
  router_id: ipv4,
  asn: Asn,
  policies_json: SpeakerPolicies.optional(),
  metadata: speakerFields.metadata.optional(),
});

export const UpdateSpeakerBody = z.strictObject(optionalFields(speakerFields));

export const SpeakerParams = z.strictObject({ speaker_id: Uuid });
export const SpeakerListQuery = listQuery({ live: queryFlag(), live_timeout_ms: z.coerce.number().int().min(100).max(10000).default(2000) });
export const SpeakerDeleteQuery = z.strictObject({ force: queryFlag() });

export const EnrollmentToken = z
  .object({
    speaker_id: Uuid,
    enrollment_token: z.string().describe("`rlt_<secret>.<hex of the gRPC CA's SPKI SHA-256>`; the speaker's older unused tokens stop working."),
    expires_at: Timestamp,
  })
  .meta({ id: "EnrollmentToken" });

const ForceConfirm = z
  .boolean()
  .optional()
  .describe(
    "true: the agents confirm without their session and route checks (the probation window still runs, and so does the controller check unless the tenant turned it off), " +
      "for a change meant to take a BGP session down or to stop exporting to it. Recorded in the audit.",
  );
export const ApplyBody = optionalBody(
  z.strictObject({
    revision_id: z.number().int().min(1).optional(),
    speaker_ids: z.array(Uuid).min(1).max(1000).optional(),
    timeout_seconds: z.number().int().min(1).max(3600).optional(),
    force_confirm: ForceConfirm,
  }),
);
export const SpeakerApplyBody = optionalBody(
  z.strictObject({
    revision_id: z.number().int().min(1).optional(),
    timeout_seconds: z.number().int().min(1).max(3600).optional(),
    force_confirm: ForceConfirm,
  }),
);

export const SigningKey = z
  .object({
    key_id: z.string(),
    alg: z.literal("ed25519"),
    public_key: z.string(),
    status: z.enum(["active", "retired"]),
    created_at: Timestamp,
    statement: z.record(z.string(), z.unknown()).nullable(),
  })
  .meta({ id: "SigningKey" });

export const SigningKeyList = z.object({ keys: z.array(SigningKey) }).meta({ id: "SigningKeyList" });

export const EnrollBody = z.strictObject({
  hostname: singleLineText().trim().min(1).max(253),
  agent_version: singleLineText().trim().min(1).max(64),
  public_key: z.string().max(128).optional(),
});

export const EnrollResult = z
  .object({
    speaker_id: Uuid,
    tenant_id: Uuid,
    api_key: z.string(),
    signing_keys: z.array(SigningKey),
    grpc_endpoint: z.string().nullable(),
    nats_url: z.string().nullable(),
    nats_credentials: z.string().nullable().meta({
      description:
        "NATS user credentials (`.creds` text: user JWT and nkey seed) limited to this speaker's subjects; null when the controller mints none. Shown once.",
    }),
  })
  .meta({ id: "EnrollResult" });

export const NatsMonitoringCredentialsBody = z
  .strictObject({
    ttl_days: z.number().int().min(1).max(365).default(30).meta({ description: "Days until the credentials expire (1..365, default 30)." }),
  })
  .default({ ttl_days: 30 });

export const NatsMonitoringCredentials = z
  .object({
    creds: z.string().meta({ description: "`.creds` text (user JWT and nkey seed) for `nats --creds`; shown once." }),
    user: z.string().meta({ description: "The NATS user's public key (U…)." }),
    account: z.string().meta({ description: "The NATS account's public key (A…)." }),
    subscribe: z.array(z.string()).meta({ description: "Subjects it may subscribe to: the tenant's events and its own inbox prefix." }),
    stream: z.string().meta({ description: "The tenant's JetStream stream of events (`RL_EVENTS_V1_<tenant_id>`), which it may read." }),
    inbox_prefix: z.string().meta({
      description: "The inbox prefix to connect with (`--inbox-prefix` of the nats CLI, `inboxPrefix` of nats.js): replies of stream reads arrive there.",
    }),
    expires_at: z.string(),
  })
  .meta({ id: "NatsMonitoringCredentials" });

export const LatestRevision = z
  .object({ speaker_id: Uuid, revision_id: z.number().int(), digest: z.string(), sequence: z.number().int(), bundle_url: z.string(), issued_at: Timestamp })
  .meta({ id: "LatestRevision" });

export const BundleParams = z.strictObject({ speaker_id: Uuid, revision_id: z.coerce.number().int().min(1).max(2147483647) });
export const BundleQuery = z.strictObject({
  base_revision: z.coerce
    .number()
    .int()
    .min(1)
    .max(2147483647)
    .optional()
    .meta({ description: "The revision the agent runs and holds the prefixes of: a delta from it comes when one was issued." }),
});

export const SignedBundle = z
  .object({ format: z.literal("rl-bundle/1"), key_id: z.string(), alg: z.literal("ed25519"), payload: z.string(), signature: z.string() })
  .meta({ id: "SignedBundle" });

const RevisionNumber = z.number().int().min(0).max(2147483647);
const SequenceNumber = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

/**
 * The largest status report the controller takes (its JSON), over HTTP or gRPC: room for a few
 * hundred BGP sessions. Reports are kept per speaker and relayed as events, so their size is
 * bounded like everything else a router can send.
 */
export const STATUS_REPORT_MAX_BYTES = 64 * 1024;

const nullableText = (max: number) => z.string().max(max).nullable().optional();

/**
 * A status report as the controller accepts it: the fields agents send (SentStatusReport), each
 * optional so that an older agent is heard, and nothing else: an unknown key is refused, so
 * only what the controller knows reaches the speaker's row and its events.
 */
export const StatusReport = z
  .strictObject({
    speaker_id: Uuid,
    reason: ReportReason,
    poll_id: z.string().max(100).nullable().optional(),
    applied_revision_id: RevisionNumber.nullable().optional(),
    applied_sequence: SequenceNumber.nullable().optional(),
    applied_digest: nullableText(200),
    applied_at: nullableText(64),
    error: z
      .strictObject({
        code: z.string().max(100),
        message: z.string().max(10000),
        revision_id: RevisionNumber.nullable().optional(),
        sequence: SequenceNumber.nullable().optional(),
        at: nullableText(64),
        check: nullableText(200),
        sessions: z.array(z.string().max(200)).max(1000).optional(),
      })
      .nullable()
      .optional(),
    bird: z
      .strictObject({
        reachable: z.boolean(),
        version: nullableText(100),
        router_id: nullableText(100),
        server_time: nullableText(100),
        last_reconfiguration: nullableText(100),
      })
      .nullable()
      .optional(),
    sessions: z
      .array(
        z.strictObject({
          protocol: z.string().max(200),
          peer_id: z.string().max(100).nullable().optional(),
          neighbor_address: nullableText(100),
          remote_asn: z.number().int().min(0).max(4294967295).nullable().optional(),
          state: nullableText(100),
          bgp_state: nullableText(100),
          since: nullableText(100),
          routes_imported: z.number().int().min(0).nullable().optional(),
          routes_exported: z.number().int().min(0).nullable().optional(),
          last_error: nullableText(1000),
        }),
      )
      .max(10000)
      .optional(),
    agent_version: singleLineText().max(64).nullable().optional(),
    reported_at: nullableText(64),
  })
  // PostgreSQL's jsonb refuses NUL characters: refused here as bad input, never a 500.
  .refine((v) => !JSON.stringify(v).includes("\\u0000"), "must not contain NUL characters")
  .refine((v) => Buffer.byteLength(JSON.stringify(v)) <= STATUS_REPORT_MAX_BYTES, `must be at most ${STATUS_REPORT_MAX_BYTES} bytes of JSON`)
  .meta({ id: "StatusReport", description: `An agent's status report: the known fields only, at most ${STATUS_REPORT_MAX_BYTES} bytes of JSON.` });
export type StatusReport = z.infer<typeof StatusReport>;
