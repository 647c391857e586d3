import { type BuildInfo, loadBuildInfo as loadPackageBuildInfo } from "@rlc/shared/version";

export type { BuildInfo };

/** This controller's version, commit and build time (the rule: shared's version.ts). */
export function loadBuildInfo(): BuildInfo {
  // src/lib/ and dist/lib/ both sit two levels below the package.
  return loadPackageBuildInfo(new URL("../../", import.meta.url));
}
