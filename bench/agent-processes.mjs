// The agents' processes of fanout.mjs's harness (fanout.mjs run as `agents`: startAgent, BIRD
// replaced by a recorder), for the benches that drive agents: fanout.mjs, refresh-agents.mjs.
import { fork } from "node:child_process";
import { ask } from "./ipc.mjs";

export { ask };

/** One agents' process, ready for its `start` message. */
export async function forkAgents() {
  const w = fork(new URL("./fanout.mjs", import.meta.url), ["agents"], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  await ask(w, null, "ready");
  return w;
}
