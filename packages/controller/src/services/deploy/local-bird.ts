import { dirname, join } from "node:path";
import {
  BirdClient,
  type BirdControl,
  BirdVersionWatch,
  classifyBirdError,
  createProcessRunner,
  loadBirdConfig,
  type ProcessRunner,
  parseProtocolsAll,
  parseShowStatus,
} from "@rlc/shared/bird";
import { type BundlePayload, verifyBundle } from "@rlc/shared/bundle";
import { AppError, ConflictError, NotFoundError } from "@rlc/shared/errors";
import type { BgpSessionLive, BirdInfo } from "@rlc/shared/schemas";
import { createSystemClock } from "@rlc/shared/time";
import type { Db, Sql } from "../../db/connect.js";
import { findCurrentRevision, findRevision } from "../../db/revisions.js";
import { findSpeakerById, listAllSpeakers, type SpeakerRow, setDesiredRevision } from "../../db/speakers.js";
import type { AuditWriter } from "../access/audit.js";
import type { RequestContext } from "../access/context.js";
import { type BundleDeps, issueBundle } from "./bundles.js";
import type { NodeService } from "./node.js";

export interface LocalBirdDeps extends BundleDeps {
  sql: Sql;
  audit: AuditWriter;
  node: NodeService;
  /** BIRD_CONTROL_SOCKET; unset = no local speaker (503 bird_unavailable). */
  socketPath: string | undefined;
  /** BIRD_CONFIG_PATH: the include file the controller owns, beside the operator's bird.conf. */
  configPath: string | undefined;
  /** Default `bird` from PATH. */
  birdBin?: string;
  runner?: ProcessRunner;
  /** Opens the control connection; tests may pass a fake BIRD. */
  connect?: (socketPath: string) => BirdControl;
}

export interface LocalBirdSnapshot {
  bird: BirdInfo;
  sessions: BgpSessionLive[];
}

const AGENT_VERSION = "controller";

const UNREACHABLE: LocalBirdSnapshot = {
  bird: { reachable: false, version: null, router_id: null, server_time: null, last_reconfiguration: null },
  sessions: [],
};

/** `/etc/bird/.rl-staging/apply-x/rl-routes.conf:3:7` → `rl-routes.conf:3:7`: answers name the file, not the host's directories. */
const withoutDirectories = (message: string) => message.replace(/(?:\/[^\s:/]+)+\/([^\s:/]+):(\d+):(\d+)/g, "$1:$2:$3");

const unavailable = (detail: string, cause?: unknown) => new AppError("bird_unavailable", detail, cause === undefined ? {} : { cause });

/**
 * The local speaker: a BIRD on the controller's own host, driven by the same BIRD sequence as an
 * agent (@rlc/shared/bird) — the bundle is issued and verified as for a remote speaker, rendered
 * in include mode into BIRD_CONFIG_PATH, checked with `bird -p`, loaded with `configure timeout`
 * (skipped when BIRD already runs those bytes), checked for its BGP protocols and confirmed. The outcome is recorded as the speaker's status report, so apply jobs
 * and live fields treat it like any agent's.
 */
export function createLocalBirdService(deps: LocalBirdDeps) {
  const runner = deps.runner ?? createProcessRunner();
  const clock = createSystemClock();
  const connect = deps.connect ?? ((socketPath: string) => new BirdClient({ socketPath, timeoutMs: 10_000 }));
  /** One reload at a time: two configure/confirm cycles on one BIRD must not interleave. */
  let queue: Promise<unknown> = Promise.resolve();

  const socket = () => {
    if (!deps.socketPath) throw unavailable("no local routing daemon is configured (BIRD_CONTROL_SOCKET)");
    return deps.socketPath;
  };

  /** The tenant's `mode: "local"` speaker (the oldest, when there are several); null when none. */
  const localSpeaker = async (db: Db, tenantId: string): Promise<SpeakerRow | null> =>
    (await listAllSpeakers(db, tenantId)).find((s) => s.mode === "local") ?? null;

  /** BIRD's status and sessions; throws bird_unavailable when the socket does not answer. */
  const snapshot = async (bird: BirdControl): Promise<LocalBirdSnapshot> => {
    try {
      const status = await bird.command("show status");
      const protocols = await bird.command("show protocols all");
      return { bird: parseShowStatus(status.text), sessions: parseProtocolsAll(protocols.text, { now: new Date() }).sessions };
    } catch (error) {
      throw unavailable(`the local BIRD does not answer on its control socket (${classifyBirdError(error)?.code ?? "internal"})`, error);
    }
  };

  /** Takes the revision for the speaker as an apply does: desired revision, next sequence, signed bundle. */
  const issue = async (ctx: RequestContext, revisionId: number | undefined) =>
    deps.sql.begin(async (tx) => {
      const found = await localSpeaker(tx, ctx.principal.tenantId);
      if (!found) throw new ConflictError('the tenant has no speaker with mode "local": create one first');
      const speaker = (await findSpeakerById(tx, ctx.principal.tenantId, found.id, true))!;
      let revision = revisionId;
      if (revision !== undefined) {
        if (!(await findRevision(tx, ctx.principal.tenantId, revision))) throw new NotFoundError("revision", revision);
      } else {
        revision = speaker.desired_revision_id ?? (await findCurrentRevision(tx, ctx.principal.tenantId))?.revision_id;
        if (revision === undefined) throw new ConflictError("there is no revision to load yet: refresh a module first");
      }
      const sequence = await setDesiredRevision(tx, speaker.id, revision, ctx.now);
      const bundle = await issueBundle(tx, deps, speaker, revision, sequence, ctx.now, { withEnvelope: true });
      await deps.audit.record(tx, ctx, {
        action: "apply",
        resource_type: "speaker",
        resource_id: speaker.id,
        summary: `local BIRD of speaker ${speaker.name} reloaded with revision ${revision} (sequence ${sequence})`,
      });
      return { speaker, revisionId: revision, sequence, envelope: bundle.envelope! };
    });

  const reload = async (ctx: RequestContext, body: { revision_id?: number | undefined }) => {
    const socketPath = socket();
    if (!deps.configPath) throw unavailable("the local routing daemon has no configuration file (BIRD_CONFIG_PATH)");
    const bird = connect(socketPath);
    try {
      // A BIRD that does not answer gets no new bundle: the speaker's desired revision stays.
      await snapshot(bird);
      return await load(ctx, bird, deps.configPath, await issue(ctx, body.revision_id));
    } finally {
      bird.close();
    }
  };

  /** verify → render → `bird -p` → configure timeout → health check → confirm → report, as the agent does. */
  const load = async (ctx: RequestContext, bird: BirdControl, configPath: string, issued: Awaited<ReturnType<typeof issue>>) => {
    const { speaker } = issued;
    let payload: BundlePayload | null = null;
    try {
      // The bytes an agent would get, verified as an agent verifies them.
      const keys = (await deps.signing.list(speaker.tenant_id)).keys;
      payload = (await verifyBundle(issued.envelope, keys, { speakerId: speaker.id, tenantId: speaker.tenant_id, lastSequence: null, now: ctx.now })).payload;
      const applyDeps = { birdc: bird, runner, clock, birdBin: deps.birdBin };
      // The render writes what this BIRD's version accepts (shared/bird/version.ts).
      const birdVersion = await new BirdVersionWatch(bird).version();
      const { rendered } = await loadBirdConfig(applyDeps, {
        payload,
        mode: "include",
        configPath,
        stagingDir: join(dirname(configPath), ".rl-staging"),
        birdVersion,
      });
      const state = await snapshot(bird).catch(() => UNREACHABLE);
      const appliedAt = new Date().toISOString();
      await deps.node.report(
        ctx.principal,
        speaker.id,
        {
          speaker_id: speaker.id,
          reason: "applied",
          poll_id: null,
          applied_revision_id: payload.revision_id,
          applied_sequence: payload.sequence,
          applied_digest: payload.digest,
          applied_at: appliedAt,
          error: null,
          ...state,
          agent_version: AGENT_VERSION,
          reported_at: appliedAt,
        },
        new Date(),
      );
      return {
        speaker_id: speaker.id,
        revision_id: payload.revision_id,
        sequence: payload.sequence,
        digest: payload.digest,
        applied_at: appliedAt,
        files: Object.keys(rendered.files).sort(),
        ...state,
      };
    } catch (error) {
      throw await failed(ctx, speaker, issued, payload, bird, error);
    }
  };

  /** Records the failure on the speaker (as an agent's apply_failed report) and maps it for the answer. */
  const failed = async (
    ctx: RequestContext,
    speaker: SpeakerRow,
    issued: { revisionId: number; sequence: number },
    payload: BundlePayload | null,
    bird: BirdControl,
    error: unknown,
  ): Promise<unknown> => {
    const classified = classifyBirdError(error);
    if (classified === null) return error; // a bug, not BIRD's answer: logged and answered as 500
    const c = { code: classified.code, message: withoutDirectories(classified.message) };
    const at = new Date().toISOString();
    const state = await snapshot(bird).catch(() => UNREACHABLE);
    await deps.node
      .report(
        ctx.principal,
        speaker.id,
        {
          speaker_id: speaker.id,
          reason: "apply_failed",
          poll_id: null,
          applied_revision_id: speaker.applied_revision_id,
          applied_sequence: speaker.applied_sequence === null ? null : Number(speaker.applied_sequence),
          applied_at: speaker.applied_at?.toISOString() ?? null,
          error: { code: c.code, message: c.message, revision_id: issued.revisionId, sequence: payload?.sequence ?? issued.sequence, at },
          ...state,
          agent_version: AGENT_VERSION,
          reported_at: at,
        },
        new Date(),
      )
      .catch(() => undefined);
    const detail = `revision ${issued.revisionId} was not loaded; BIRD keeps its running configuration: ${c.code}: ${c.message}`;
    if (c.code === "bird_unavailable" || c.code === "bird_timeout") return unavailable(detail, error);
    return new AppError("apply_failed", detail, {
      cause: error,
      extra: { speaker_id: speaker.id, revision_id: issued.revisionId, error: { code: c.code, message: c.message } },
    });
  };

  return {
    /** BIRD's status and parsed sessions, with the local speaker and the revision it runs. */
    async status(ctx: RequestContext) {
      const bird = connect(socket());
      try {
        const state = await snapshot(bird);
        const speaker = await localSpeaker(deps.sql, ctx.principal.tenantId);
        return {
          speaker_id: speaker?.id ?? null,
          desired_revision_id: speaker?.desired_revision_id ?? null,
          applied_revision_id: speaker?.applied_revision_id ?? null,
          ...state,
        };
      } finally {
        bird.close();
      }
    },

    /** Loads a revision (default: the speaker's desired one, else the current one) into the local BIRD. */
    reload(ctx: RequestContext, body: { revision_id?: number | undefined }) {
      const run = queue.then(() => reload(ctx, body));
      queue = run.catch(() => undefined);
      return run;
    },
  };
}

export type LocalBirdService = ReturnType<typeof createLocalBirdService>;
