// What an apply asks to issue and what it issued: apply-awaiting.ts and deploy.ts both name them.

/** What an `apply` job asks for: its params. */
export interface IssueRequest {
  revision_id: number;
  speaker_ids: string[];
  force_confirm?: boolean | undefined;
}

/** The bundles an apply issued, and the speakers that were gone by then. */
export interface Issued {
  issued: { speaker_id: string; sequence: number; digest: string }[];
  deleted: string[];
}
