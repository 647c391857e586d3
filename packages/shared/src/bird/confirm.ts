import type { BirdControl, BirdReply } from "./birdc.js";
import { ApplyError } from "./errors.js";
import { removeObsolete, type StagedFiles } from "./swap-files.js";

// The confirm step, and its opposite: `configure confirm` keeps what BIRD runs on probation;
// `configure undo` (with the previous files back first) ends it early.

/** A configuration BIRD runs on probation: confirm it, or undo it, or let BIRD revert. */
export interface PendingApply {
  /**
   * False when every file already held these bytes: BIRD runs this config, nothing was written,
   * validated or configured, and confirm and undo have nothing to do.
   */
  configured: boolean;
  /** BIRD's reply to `configure timeout`; null when nothing was configured. */
  reply: BirdReply | null;
  /** `configure confirm`. Throws `bird_reverted` when BIRD had already gone back (timeout). */
  confirm(): Promise<BirdReply>;
  /**
   * Puts the previous files back and sends `configure undo`; BIRD's reply says whether it went
   * back now (0021/0003/0004) or had nothing to undo (0019: its timer was first).
   */
  undo(): Promise<BirdReply>;
}

/** The configuration `configure timeout` put on probation, over the files the stage step swapped in. */
export function pendingApply(birdc: BirdControl, staged: StagedFiles, reply: BirdReply): PendingApply {
  return {
    configured: true,
    reply,
    confirm: async () => {
      const r = await birdc.command("configure confirm");
      // 0019 "Nothing to do": the timer had run out and BIRD is back on the old config.
      if (r.code === 19) throw new ApplyError("bird_reverted", "BIRD had already reverted the configuration (confirm came too late)");
      await removeObsolete(staged);
      return r;
    },
    undo: async () => {
      await staged.restore();
      return birdc.command("configure undo");
    },
  };
}

/** When BIRD already runs these bytes: nothing to confirm or undo. */
export function nothingPending(): PendingApply {
  const nothing = async (): Promise<BirdReply> => ({ code: 0, text: "", lines: [] });
  return { configured: false, reply: null, confirm: nothing, undo: nothing };
}

/**
 * Confirms, or when the confirm fails (BIRD had gone back, or did not answer) undoes at once
 * rather than when BIRD's timer runs out, and throws the confirm's error. An undo that fails
 * too is left to BIRD's timer and reported to `onUndoFailed`.
 */
export async function confirmOrUndo(pending: PendingApply, onUndoFailed: (error: unknown) => void = () => undefined): Promise<BirdReply> {
  try {
    return await pending.confirm();
  } catch (error) {
    await pending.undo().catch(onUndoFailed);
    throw error;
  }
}
