// Local HTTP servers for the DoH tests: a dns-json server (neither unbound nor dnsdist speaks
// that API) and a wire-format server that answers whatever bytes a test wants.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface JsonAnswer {
  name: string;
  type: number;
  TTL: number;
  data: string;
}

/** What the server does with one question; `delayMs` holds the answer back, `status` sends an HTTP error. */
export type JsonHandler = (
  name: string,
  type: string,
) => { Status: number; Answer?: JsonAnswer[] } | { delayMs: number; answer: { Status: number; Answer?: JsonAnswer[] } } | { status: number };

export interface TestServer {
  url: string;
  /** Requests received, as `METHOD path?query`. */
  requests: string[];
  /** Requests whose client went away before the answer was sent. */
  abandoned: number;
  /** The most requests that were being answered at one time. */
  mostInFlight: number;
  close(): Promise<void>;
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

function closer(server: Server): () => Promise<void> {
  return () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
}

export async function startJsonDohServer(handler: JsonHandler): Promise<TestServer> {
  const state = { requests: [] as string[], abandoned: 0, inFlight: 0, mostInFlight: 0 };
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    state.requests.push(`${req.method} ${req.url}`);
    state.mostInFlight = Math.max(state.mostInFlight, ++state.inFlight);
    let done = false;
    const finished = () => {
      if (!done) state.inFlight--;
      done = true;
    };
    res.once("finish", finished);
    res.once("close", finished);
    const query = new URL(req.url ?? "/", "http://x").searchParams;
    let answer = handler(query.get("name") ?? "", query.get("type") ?? "");
    if ("delayMs" in answer) {
      const { delayMs } = answer;
      const closed = new Promise<boolean>((resolve) => res.once("close", () => resolve(true)));
      const waited = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), delayMs));
      if (await Promise.race([closed, waited])) {
        state.abandoned++;
        return;
      }
      answer = answer.answer;
    }
    if ("status" in answer) {
      res.writeHead(answer.status).end("no");
      return;
    }
    res.writeHead(200, { "content-type": "application/dns-json" }).end(JSON.stringify(answer));
  });
  const port = await listen(server);
  return {
    url: `http://127.0.0.1:${port}/resolve`,
    get requests() {
      return state.requests;
    },
    get abandoned() {
      return state.abandoned;
    },
    get mostInFlight() {
      return state.mostInFlight;
    },
    close: closer(server),
  };
}

/** An HTTP/1.1-only server answering every request with `body` as `contentType`. */
export async function startRawServer(contentType: string, body: Buffer | string): Promise<TestServer> {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    res.writeHead(200, { "content-type": contentType }).end(body);
  });
  const port = await listen(server);
  return { url: `http://127.0.0.1:${port}/dns-query`, requests, abandoned: 0, mostInFlight: 0, close: closer(server) };
}

export const jsonA = (name: string, data: string, TTL = 60): JsonAnswer => ({ name: `${name}.`, type: 1, TTL, data });
export const jsonAAAA = (name: string, data: string, TTL = 60): JsonAnswer => ({ name: `${name}.`, type: 28, TTL, data });
export const jsonCname = (name: string, target: string, TTL = 60): JsonAnswer => ({
  name: `${name}.`,
  type: 5,
  TTL,
  data: `${target}.`,
});
