import { Gauge, type Registry } from "prom-client";
import type { RpkiValidator } from "../sources/rpki-source.js";

/**
 * The VRP document of this process (`RPKI_VRP_SOURCE`), read at each scrape. Registered in every
 * process, configured or not, so that the alert can tell "not configured" (rlc_rpki_configured 0)
 * from "configured but unavailable" (rlc_rpki_available 0): validation then drops nothing.
 */
export function registerRpkiMetrics(registry: Registry, rpki: RpkiValidator | null, now: () => number = Date.now): void {
  const registers = [registry];
  new Gauge({
    name: "rlc_rpki_configured",
    help: "1 when RPKI_VRP_SOURCE is set in this process, else 0.",
    registers,
    collect() {
      this.set(rpki ? 1 : 0);
    },
  });
  new Gauge({
    name: "rlc_rpki_available",
    help: "1 while RPKI origin validation is available (the VRP document loaded and younger than RPKI_MAX_AGE_HOURS), else 0; while 0, modules with rpki_policy drop nothing.",
    registers,
    collect() {
      this.set(rpki?.status().available ? 1 : 0);
    },
  });
  new Gauge({
    name: "rlc_rpki_vrps",
    help: "VRPs in the index validation uses (0 while unavailable).",
    registers,
    collect() {
      this.set(rpki?.status().vrp_count ?? 0);
    },
  });
  new Gauge({
    name: "rlc_rpki_document_age_seconds",
    help: "Age of the VRP document by its own build time; absent until one has been read.",
    registers,
    collect() {
      this.reset();
      const at = rpki?.status().generated_at;
      if (at) this.set((now() - Date.parse(at)) / 1000);
    },
  });
}
