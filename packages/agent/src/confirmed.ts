import { type BundlePayload, chunkedBytes, compactSection, lazyPrefixes, type SectionTags } from "@rlc/shared/bundle";
import { readKeptPayload } from "./bundle/kept-bundle.js";
import { type KeptPrefixes, keepSection } from "./bundle/kept-prefixes.js";
import type { VerifiedKept } from "./bundle/verify-kept.js";
import type { AppliedPrefixes, AppliedRecord, StateStore } from "./state.js";

/**
 * The revision BIRD last confirmed, as the sync loop needs it: its prefix section with a line
 * index (what the next delta applies to) and its payload (what the probation compares with).
 * Kept in memory from one sync to the next; read from the state directory once after a start.
 * Always checked against applied.json, which is written last, so a record cut short by a crash
 * reads as the older revision (and a delta on it fails its base check and the full bundle comes).
 */
export class ConfirmedRevision {
  readonly #state: StateStore;
  readonly #tags: SectionTags;
  /** One section in memory between applies: a delta's is made anew, and the one before goes once it is confirmed. */
  #kept: KeptPrefixes | null = null;
  #payload: BundlePayload | null = null;

  constructor(state: StateStore, tags: SectionTags) {
    this.#state = state;
    this.#tags = tags;
  }

  /** The prefixes of the revision `applied` names, when the agent holds them. */
  async prefixes(applied: AppliedRecord | null): Promise<KeptPrefixes | null> {
    if (!applied) return null;
    if (this.#kept?.revision_id === applied.revision_id) return this.#kept;
    const section = await this.#state.readLastPrefixes().catch(() => null);
    this.#kept = section ? keepSection(applied.revision_id, section, this.#tags) : null;
    return this.#kept;
  }

  /**
   * The payload of the bundle BIRD last confirmed; null when there is none or it does not match
   * applied.json. Our own files, written after verification (readKeptPayload); they may have
   * expired since, so they are not verified again.
   */
  async payload(applied: AppliedRecord | null): Promise<BundlePayload | null> {
    if (!applied) return null;
    if (this.#payload?.sequence === applied.sequence && this.#payload.revision_id === applied.revision_id) return this.#payload;
    // The section as prefixes() holds it: at a start the base and its log are read and replayed once, not once for each.
    const kept = await this.prefixes(applied).catch(() => null);
    const [bytes, read] = await Promise.all([this.#state.readLastBundle(), kept ? null : this.#state.readLastPrefixes()]);
    const prefixes = kept ? chunkedBytes(kept.section) : read;
    if (!bytes) return null;
    const payload = readKeptPayload(bytes, prefixes);
    // Read again only when asked (a restore at start renders from the section's columns).
    if (payload && prefixes) payload.prefixes = lazyPrefixes(prefixes);
    this.#payload = payload?.sequence === applied.sequence ? payload : null;
    return this.#payload;
  }

  /**
   * A quiet moment (the apply is done and reported): the kept section's chunks copied into one
   * buffer when the buffers they are views of hold more than twice what it needs (chunked-section.ts).
   */
  settle(): void {
    if (this.#kept) compactSection(this.#kept.section);
  }

  /** A confirmed apply: on disk first (StateStore.recordApplied), then what is held in memory. */
  async record(bundle: Uint8Array, record: AppliedRecord, verified: VerifiedKept): Promise<void> {
    this.#kept = null;
    this.#payload = null;
    await this.#state.recordApplied(bundle, record, appliedPrefixes(verified));
    this.#payload = verified.payload;
    this.#kept = verified.kept;
  }
}

/** What the state records of a verified bundle's section: a delta's section joined into one buffer only if the state writes its base again. */
function appliedPrefixes(verified: VerifiedKept): AppliedPrefixes | undefined {
  if (!verified.kept && !verified.prefixSection) return undefined;
  return {
    delta: verified.deltaRecord,
    get section() {
      return verified.prefixSection as Uint8Array;
    },
  };
}
