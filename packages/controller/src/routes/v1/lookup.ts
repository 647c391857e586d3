import { LookupQuery, LookupResult } from "@rlc/shared/schemas";
import { validatorCompiler } from "fastify-type-provider-zod";
import { authProblems, compiledSerializer } from "../responses.js";
import type { RoutePlugin } from "../route-file.js";

const { minLength, maxLength } = LookupQuery.shape.q;

/**
 * The query of nearly every lookup is one `q` of a valid length: that is checked by hand, and
 * anything else is left to the zod schema, which answers as for every other route (the zod
 * parse was ~1 µs a lookup of a few tens beyond a bare route's, bench/lookup-latency.mjs).
 */
function lookupQueryValidator(route: { schema: unknown }) {
  const parse = validatorCompiler(route as Parameters<typeof validatorCompiler>[0]);
  return (data: unknown) => {
    const query = data as Record<string, unknown> | null;
    const q = query?.q;
    if (typeof q === "string" && q.length >= (minLength ?? 0) && q.length <= (maxLength ?? Number.POSITIVE_INFINITY)) {
      let only = true;
      for (const name in query) only &&= name === "q";
      if (only) return { value: query };
    }
    return parse(data);
  };
}

const lookupRoutes: RoutePlugin = async (app, { deps }) => {
  app.get(
    "/v1/lookup",
    {
      schema: {
        tags: ["lookup"],
        summary: "Is an IP address or a domain in the lists?",
        description:
          "Entry layer (IP_RANGES containment, DOMAINS equality or subdomain), snapshot layer (every module's collected prefixes; for a domain, the addresses it resolved to) " +
          "and the longest prefix of the current revision. Never resolves anything live. " +
          "Answers come from an in-memory view of the tenant's modules, communities, IP_RANGES entries, snapshots and current revision. " +
          "It reads its writes: once a write (an entry, a module, a community, a rollback) has answered, or a job (a refresh) has ended, the next lookup sees it, " +
          "on every replica (another replica's write arrives within a bus round-trip; the view is also re-checked at least once a second). " +
          "A domain's entries and addresses are read from the database on each request.",
        querystring: LookupQuery,
        response: { 200: LookupResult, ...authProblems },
      },
      validatorCompiler: lookupQueryValidator,
      // The answer is built by the lookup service alone: compiled, not parsed (see compiledSerializer).
      serializerCompiler: compiledSerializer,
    },
    // Not async: with the tenant's view fresh the service answers at once, and the reply is sent
    // without a promise and a microtask turn (a promise only while the view is being read).
    (req) => deps.services.lookup.lookup(req.principal!.tenantId, req.query.q) as never,
  );
};

export default lookupRoutes;
