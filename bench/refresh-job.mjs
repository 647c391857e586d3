// A refresh through the API for the benches that drive a controller: `?wait=true`, then the job
// followed to its end when it outlasts the wait (a loaded machine).

/** POSTs `payload` to `url` (a refresh route with ?wait=true) with `call(method, url, payload)`; answers the succeeded job. */
export async function refreshToEnd(call, url, payload) {
  let job = await call("POST", url, payload);
  while (job.status !== "succeeded" && job.status !== "failed") {
    await new Promise((r) => setTimeout(r, 200));
    job = await call("GET", `/v1/jobs/${job.job_id}`);
  }
  if (job.status !== "succeeded") throw new Error(`refresh failed: ${JSON.stringify(job.error)}`);
  return job;
}
