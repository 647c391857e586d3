import type { Schema } from "../api.js";
import { Chart } from "./chart.js";

type Speaker = Schema<"Speaker">;
export const FLEET_STATES = ["in sync", "pending", "failed", "stale"] as const;
export type FleetState = (typeof FLEET_STATES)[number];

/** A router whose agent has not reported for this long (or never) is stale, whatever it last said. */
export const STALE_AFTER_MS = 5 * 60_000;

/**
 * One state per router: stale (a remote router whose agent never reported or not for 5 minutes),
 * else failed (its dispatch failed or its agent reports an error), else in sync (the agent runs
 * the desired revision), else pending (a revision on its way).
 */
export function fleetState(s: Speaker, now = Date.now()): FleetState {
  if (s.mode === "remote" && (!s.last_seen_at || now - Date.parse(s.last_seen_at) > STALE_AFTER_MS)) return "stale";
  if (s.dispatch_status === "failed" || s.sync_status === "error") return "failed";
  if (s.sync_status === "in_sync") return "in sync";
  return "pending";
}

/** How many routers are in sync, pending, failed and stale: a bar each, the counts beside. */
export function FleetChart({ speakers }: { speakers: Speaker[] }) {
  const counts = FLEET_STATES.map((state) => speakers.filter((s) => fleetState(s) === state).length);
  return (
    <section class="picture" aria-labelledby="fleet-state">
      <h2 id="fleet-state">Fleet</h2>
      <Chart
        label={`Routers by state: ${FLEET_STATES.map((s, i) => `${counts[i]} ${s}`).join(", ")}.`}
        kind="bars"
        testId="chart-fleet"
        height={160}
        x={FLEET_STATES.map((_, i) => i)}
        xLabels={[...FLEET_STATES]}
        series={[{ label: "routers", values: counts, color: "--accent" }]}
      />
      <table data-testid="fleet-numbers">
        <tbody>
          {FLEET_STATES.map((state, i) => (
            <tr key={state} data-state={state}>
              <th scope="row">{state}</th>
              <td class="num">{counts[i]}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
