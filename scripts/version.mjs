// The release version as Debian orders it, for the .deb (scripts/package.mjs). The version itself
// comes from the repository's tags by the one rule of packages/shared/src/version.ts.

/**
 * A build after a release sorts after it (`1.4.0-dev.3+gabc1234` → `1.4.0+dev.3.gabc1234`), one
 * before any release before every release (`0.0.0-dev+gabc1234` → `0.0.0~dev+gabc1234`), a
 * pre-release before its release (`2.0.0-rc.1` → `2.0.0~rc.1`).
 */
export function debianVersion(version) {
  const after = /^(\d+\.\d+\.\d+)-dev\.(\d+)\+g([0-9a-f]+)$/.exec(version);
  if (after) return `${after[1]}+dev.${after[2]}.g${after[3]}`;
  return version.replace("-", "~");
}
