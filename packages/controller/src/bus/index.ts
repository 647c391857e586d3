import type { Bus } from "./bus.js";
import { createMemoryBus } from "./memory-bus.js";
import { createNatsBus } from "./nats-bus.js";

export type { Bus } from "./bus.js";

export async function createBus(natsUrl: string | undefined, name = "rl-controller"): Promise<Bus> {
  return natsUrl ? createNatsBus(natsUrl, name) : createMemoryBus();
}
