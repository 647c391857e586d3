import type { AddressInfo } from "node:net";
import { createServer, type Server, type Socket } from "node:net";

/**
 * A real TCP server speaking the part of IRRd's query protocol that AS-SET expansion uses, as
 * IRRd 4 answers it: `!!` (persistent), `!n<client>`, `!s-lc` (the selected sources), `!s<list>`
 * (select; an unknown source is an `F`), `!i<set>` (direct members) and `!i<set>,1` (members
 * resolved recursively across the selected sources, each set once, missing sets skipped), `!q`.
 * `recursive: false` makes `,1` answer direct members only, as a server that does not resolve
 * them would. Tests change `sets` between refreshes.
 */
export async function startIrrdServer(init: { sets: Record<string, Record<string, string[]>>; defaultSources?: string[] }) {
  const state = {
    sets: init.sets,
    recursive: true,
    /** Every query line received, in order, per connection. */
    queries: [] as string[][],
    /** Answer nothing more (a server that stalls). */
    hang: false,
  };
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => {});
    const log: string[] = [];
    state.queries.push(log);
    let selected = init.defaultSources ?? Object.keys(state.sets);
    let pending = "";
    socket.on("data", (chunk) => {
      pending += chunk.toString("utf8");
      // A stalled server answers nothing more on the connection.
      if (state.hang) return;
      let nl = pending.indexOf("\n");
      while (nl !== -1) {
        const line = pending.slice(0, nl).replace(/\r$/, "");
        pending = pending.slice(nl + 1);
        nl = pending.indexOf("\n");
        log.push(line);
        if (line === "!!" || line.startsWith("!n")) {
          if (line.startsWith("!n")) socket.write("C\n");
          continue;
        }
        if (line === "!q") {
          socket.end();
          return;
        }
        if (line === "!s-lc") {
          socket.write(data(selected.join(",")));
          continue;
        }
        if (line.startsWith("!s")) {
          const wanted = line
            .slice(2)
            .split(",")
            .map((s) => s.trim().toUpperCase());
          const unknown = wanted.filter((s) => !(s in state.sets));
          if (unknown.length) socket.write(`F Unknown source(s): ${unknown.join(", ")}\n`);
          else {
            selected = wanted;
            socket.write("C\n");
          }
          continue;
        }
        if (line.startsWith("!i")) {
          const [name, flag] = line.slice(2).split(",");
          socket.write(answerSet(state, selected, name!.trim().toUpperCase(), flag === "1" && state.recursive));
          continue;
        }
        socket.write("F Unrecognized command\n");
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return {
    state,
    port,
    url: `whois://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

const data = (text: string) => `A${Buffer.byteLength(text) + 1}\n${text}\nC\n`;

function find(state: { sets: Record<string, Record<string, string[]>> }, selected: string[], name: string): string[] | undefined {
  for (const source of selected) {
    const found = state.sets[source]?.[name];
    if (found) return found;
  }
  return undefined;
}

function answerSet(state: { sets: Record<string, Record<string, string[]>> }, selected: string[], name: string, recursive: boolean): string {
  const members = find(state, selected, name);
  if (!members) return "D\n";
  if (!recursive) return members.length ? data(members.join(" ")) : "C\n";
  const asns = new Set<string>();
  const seen = new Set([name]);
  const walk = (list: string[]) => {
    for (const m of list) {
      const upper = m.toUpperCase();
      if (/^AS\d+$/.test(upper)) asns.add(upper);
      else if (!seen.has(upper)) {
        seen.add(upper);
        walk(find(state, selected, upper) ?? []);
      }
    }
  };
  walk(members);
  return asns.size ? data([...asns].join(" ")) : "C\n";
}
