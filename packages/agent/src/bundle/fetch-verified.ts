import { BundleError, isBundleV2, type ReceivedBundle, type SectionTags, splitBundleV2, type VerifyOptions } from "@rlc/shared/bundle";
import type { Clock } from "@rlc/shared/time";
import type { Logger } from "../log.js";
import type { AppliedRecord, StateStore } from "../state.js";
import type { ControllerClient } from "./controller-client.js";
import type { KeptPrefixes } from "./kept-prefixes.js";
import { refreshPinnedKeys } from "./signing-keys.js";
import { headCheck, type VerifiedKept, verifyKept } from "./verify-kept.js";

// The sync's fetch and verify steps: the bundle the controller names, as a delta from the
// prefixes BIRD runs when the agent holds them, checked before anything of it is used.

export interface BundleFetcherOptions {
  client: Pick<ControllerClient, "fetchBundle" | "signingKeys">;
  state: StateStore;
  log: Logger;
  clock: Pick<Clock, "now">;
  speakerId: string;
  tenantId: string;
  maxBundleBytes?: number | undefined;
  /** The agent's one numbering of community sets, shared by every section it keeps. */
  tags: SectionTags;
}

export interface FetchRequest {
  revisionId: number;
  /** What BIRD runs now: its sequence is the floor of the next one. */
  applied: AppliedRecord | null;
  /** The prefixes of the revision BIRD runs, when the agent holds them: a delta from them may come. */
  base: KeptPrefixes | null;
  /** Each bundle's bytes as they come, before they are verified: what a refusal names. */
  offered: { bytes: Uint8Array | null };
  /** Marks the end of each fetch and each verify, for the sync's step times. */
  steps?: { mark(step: string): void };
}

export interface FetchedBundle {
  bytes: Uint8Array;
  verified: VerifiedKept;
}

export class BundleFetcher {
  readonly #o: BundleFetcherOptions;

  constructor(options: BundleFetcherOptions) {
    this.#o = options;
  }

  /**
   * Fetches the bundle of `revisionId`, asking for a delta from `base`, and verifies it. A delta
   * the agent cannot use (its base is not what the agent holds, or the prefixes rebuilt from it
   * are not the revision's) is dropped and the full bundle fetched and verified instead; every
   * other refusal stands, as it would for a full bundle.
   */
  async fetch(request: FetchRequest): Promise<FetchedBundle> {
    const { client, log } = this.#o;
    const onHead = headCheck(await this.#o.state.readSigningKeys(), this.#verifyOptions(request.applied));
    const receive = async (baseRevisionId: number | null) => {
      const received = await client.fetchBundle(request.revisionId, { baseRevisionId, onHead });
      request.offered.bytes = received.bytes;
      request.steps?.mark("fetch");
      return received;
    };
    const check = async (received: ReceivedBundle, base: KeptPrefixes | null) => {
      const verified = await this.#verify(received, request.applied, base);
      request.steps?.mark("verify");
      return { bytes: received.bytes, verified };
    };
    const received = await receive(request.base?.revision_id ?? null);
    try {
      return await check(received, request.base);
    } catch (error) {
      const usable = error instanceof BundleError && (error.code === "delta_base_mismatch" || (error.code === "digest_mismatch" && isDelta(received.bytes)));
      if (!usable) throw error;
      log.warn("sync: the delta bundle does not fit the prefixes held; fetching the full bundle", { revision_id: request.revisionId, code: error.code });
      return check(await receive(null), null);
    }
  }

  #verifyOptions(applied: AppliedRecord | null): Omit<VerifyOptions, "base" | "received"> {
    return {
      speakerId: this.#o.speakerId,
      tenantId: this.#o.tenantId,
      lastSequence: applied?.sequence ?? null,
      now: this.#o.clock.now(),
      maxBytes: this.#o.maxBundleBytes,
    };
  }

  /** verifyKept; a key not pinned yet first refreshes the pinned keys through their statements. */
  async #verify(received: ReceivedBundle, applied: AppliedRecord | null, base: KeptPrefixes | null): Promise<VerifiedKept> {
    const { state, client, log } = this.#o;
    const options = this.#verifyOptions(applied);
    const verify = async () => verifyKept(received, await state.readSigningKeys(), options, base, this.#o.tags);
    try {
      return await verify();
    } catch (error) {
      if (!(error instanceof BundleError) || error.code !== "unknown_key") throw error;
      if (!(await refreshPinnedKeys({ state, signingKeys: () => client.signingKeys(), log }))) throw error;
      return verify();
    }
  }
}

function isDelta(bytes: Uint8Array): boolean {
  try {
    return isBundleV2(bytes) && (JSON.parse(Buffer.from(splitBundleV2(bytes).header).toString("utf8")) as { section?: string }).section === "delta";
  } catch {
    return false;
  }
}
