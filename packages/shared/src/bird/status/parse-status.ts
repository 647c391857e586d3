import type { BirdInfo } from "../../schemas/index.js";

/**
 * `show status` as BirdClient returns it (codes dropped):
 *
 *   BIRD 2.0.12
 *   Router ID is 127.0.0.1
 *   Hostname is vm
 *   Current server time is 2026-11-22 04:15:49.716
 *   Last reboot on 2026-11-22 04:15:30.682
 *   Last reconfiguration on 2026-11-22 04:15:30.682
 *   Daemon is up and running
 *
 * Times are BIRD's host-local time (the agent's host); they are reported in UTC.
 */
export function parseShowStatus(text: string, options: { timeZone?: "local" | "utc" } = {}): BirdInfo {
  const line = (re: RegExp) => re.exec(text)?.[1] ?? null;
  const time = (value: string | null) => (value ? localTime(value, options.timeZone ?? "local") : null);
  return {
    reachable: true,
    version: line(/^BIRD (\S+)\s*$/m),
    router_id: line(/^Router ID is (\S+)/m),
    server_time: time(line(/^Current server time is (.+?)\s*$/m)),
    last_reconfiguration: time(line(/^Last reconfiguration on (.+?)\s*$/m)),
  };
}

/** `2026-11-22 04:15:49.716` (BIRD's iso long or short format) → RFC 3339 UTC; null otherwise. */
function localTime(value: string, timeZone: "local" | "utc"): string | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?$/.exec(value);
  if (!m) return null;
  const parts = [1, 2, 3, 4, 5, 6].map((i) => Number(m[i])) as [number, number, number, number, number, number];
  const ms = m[7] ? Number(m[7].slice(0, 3).padEnd(3, "0")) : 0;
  const [y, mo, d, h, mi, s] = parts;
  const at = timeZone === "utc" ? Date.UTC(y, mo - 1, d, h, mi, s, ms) : new Date(y, mo - 1, d, h, mi, s, ms).getTime();
  return Number.isNaN(at) ? null : new Date(at).toISOString();
}
