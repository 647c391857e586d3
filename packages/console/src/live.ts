import { useEffect, useState } from "preact/hooks";
import { ok, type Schema } from "./api.js";
import { useSession } from "./session.js";

/**
 * Every speaker with its agent's report as of now. There is no server push in the API;
 * `GET /v1/speakers?live=true` is its live route: each call asks the agents over the bus for a
 * fresh report and answers when they arrive (or after the timeout). The page asks again as soon
 * as an answer is in, at most once a second; a failed round keeps the last answer and its error.
 */
export function useLiveSpeakers(): { speakers: Schema<"Speaker">[] | null; error: Error | null } {
  const { api } = useSession();
  const [speakers, setSpeakers] = useState<Schema<"Speaker">[] | null>(null);
  const [error, setError] = useState<Error | null>(null);
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const round = async () => {
      const started = Date.now();
      try {
        const page = await ok(api.GET("/v1/speakers", { params: { query: { limit: 500, live: "true", live_timeout_ms: 3000 } } }));
        if (!stopped) {
          setSpeakers(page.items);
          setError(null);
        }
      } catch (e) {
        if (!stopped) setError(e as Error);
      }
      if (!stopped) timer = setTimeout(round, Math.max(0, 1000 - (Date.now() - started)));
    };
    void round();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, []);
  return { speakers, error };
}
