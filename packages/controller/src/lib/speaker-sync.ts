/** What a speaker's sync status is decided from: its row's fields of that name. */
export interface SyncInputs {
  last_report_at: Date | null;
  dispatch_status: string;
  last_error: unknown;
  desired_revision_id: number | null;
  applied_revision_id: number | null;
}

/**
 * A speaker's sync status: one rule for the API (`sync_status`, services/deploy/speakers.ts) and
 * the fleet gauges (metrics/fleet-reads.ts), kept here, below both.
 */
export function syncStatusOf(row: SyncInputs): "in_sync" | "out_of_sync" | "unknown" | "error" {
  if (row.last_report_at === null) return "unknown";
  if (row.dispatch_status === "failed" || (row.last_error && row.applied_revision_id !== row.desired_revision_id)) return "error";
  if (row.desired_revision_id !== null && row.applied_revision_id !== row.desired_revision_id) return "out_of_sync";
  return "in_sync";
}
