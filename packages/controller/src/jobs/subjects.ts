/** Bus subjects of the job queue. */
export const JOBS_WAKE_SUBJECT = "rl.jobs.wake";
export const jobFinishedSubject = (tenantId: string, jobId: string) => `rl.${tenantId}.jobs.${jobId}.finished`;
