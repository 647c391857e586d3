import { mapLimit } from "../lib/map-limit.js";
import type { Bus } from "./bus.js";
import type { NatsTenantAuthority } from "./nats-tenants.js";

/** Eight account pushes at a time, as the start's streams go. */
const AT_ONCE = 8;

export interface ReconnectOptions {
  bus: Bus;
  /** The tenant accounts' authority; null without tenant accounts (one account, development). */
  authority: NatsTenantAuthority | null;
  /** The events' history over `bus` (`events/history.ts`). */
  history: { forget(): void; ensureTenants(tenantIds: string[]): Promise<void> };
  tenantIds: () => Promise<string[]>;
  onError: (error: unknown) => void;
}

/**
 * What a NATS that comes back may have lost, given back: the server reconnected to may be a new
 * one (a store wiped, a server replaced, a cluster made again), which knows neither the tenant
 * accounts pushed to the one before (the tenants' agents and monitoring users could not sign in)
 * nor their event streams. At each reconnect every tenant's account is pushed again and every
 * stream made or checked again, as at start; the accounts first, since they need no JetStream.
 * One round at a time: a reconnect during a round runs one more after it.
 */
export function restoreOnReconnect(o: ReconnectOptions): void {
  if (!o.bus.onReconnect) return;
  let running: Promise<void> | null = null;
  let again = false;
  const round = async () => {
    const ids = await o.tenantIds();
    if (o.authority) {
      const authority = o.authority;
      authority.forgetPushed();
      await mapLimit(ids, AT_ONCE, (id) => authority.ensureAccount(id).catch(o.onError));
    }
    o.history.forget();
    await o.history.ensureTenants(ids);
  };
  const run = () => {
    if (running) {
      again = true;
      return;
    }
    running = round()
      .catch(o.onError)
      .finally(() => {
        running = null;
        if (again) {
          again = false;
          run();
        }
      });
  };
  o.bus.onReconnect(run);
}
