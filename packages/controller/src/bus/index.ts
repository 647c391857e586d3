import { readFile } from "node:fs/promises";
import type { Bus } from "./bus.js";
import { createMemoryBus } from "./memory-bus.js";
import { createNatsBus, type NatsBusOptions } from "./nats-bus.js";

export type { Bus } from "./bus.js";

export interface BusSettings {
  NATS_URL?: string | undefined;
  NATS_CREDS_FILE?: string | undefined;
}

export async function createBus(settings: BusSettings, options: Partial<NatsBusOptions> = {}): Promise<Bus> {
  if (!settings.NATS_URL) return createMemoryBus();
  const creds = settings.NATS_CREDS_FILE ? await readFile(settings.NATS_CREDS_FILE, "utf8") : undefined;
  return createNatsBus({ name: "rl-controller", ...options, url: settings.NATS_URL, creds });
}
