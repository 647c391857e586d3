// The agents' processes of fanout.mjs's harness (fanout.mjs run as `agents`: startAgent, BIRD
// replaced by a recorder), for the benches that drive agents: fanout.mjs, refresh-agents.mjs.
import { fork } from "node:child_process";

/**
 * Sends `msg` (none: only waits) to the agents' process `w` and resolves with its first message
 * of type `answer`; rejects when the process exits first.
 */
export function ask(w, msg, answer) {
  return new Promise((resolve, reject) => {
    const onMessage = (m) => {
      if (m.type !== answer) return;
      w.off("message", onMessage);
      w.off("exit", onExit);
      resolve(m);
    };
    const onExit = (code) => reject(new Error(`an agents' process exited (${code}) before answering ${answer}`));
    w.on("message", onMessage);
    w.once("exit", onExit);
    if (msg) w.send(msg);
  });
}

/** One agents' process, ready for its `start` message. */
export async function forkAgents() {
  const w = fork(new URL("./fanout.mjs", import.meta.url), ["agents"], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  await ask(w, null, "ready");
  return w;
}
