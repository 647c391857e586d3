import type { DeployService } from "../services/deploy/deploy.js";
import type { PeriodicTask } from "./scheduler.js";

/** Signs again the bundles that expire within two days (DeployService.reissueExpiring). */
export function bundleReissueTask(deploy: DeployService, everyMs = 15 * 60_000): PeriodicTask {
  return { name: "bundle_reissue", everyMs, run: (now) => deploy.reissueExpiring(now) };
}
