// Messages to the benches' child processes (forked with an IPC channel): a question and its answer.

/**
 * Sends `msg` (none: only waits) to the child process `w` and resolves with its first message
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
    const onExit = (code) => reject(new Error(`a bench's child process exited (${code}) before answering ${answer}`));
    w.on("message", onMessage);
    w.once("exit", onExit);
    if (msg) w.send(msg);
  });
}
