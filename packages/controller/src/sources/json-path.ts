// The json_path of a CDN source: dot-separated keys, `[*]` for every element of an array, `[N]`
// for one element, and `?key=value` after `[*]` to keep the elements whose `key` equals `value`.
// Example: `prefixes[*]?service=CLOUDFRONT.ip_prefix`.
// A path is parsed once (routes validate it when a source is saved) and evaluated per fetch.

export type JsonPathStep =
  | { kind: "key"; name: string }
  | { kind: "every" }
  | { kind: "index"; index: number }
  | { kind: "filter"; key: string; value: string };

export interface JsonPath {
  source: string;
  steps: readonly JsonPathStep[];
}

export class JsonPathError extends Error {
  override readonly name = "JsonPathError";
  readonly code = "invalid_json_path" as const;
  /** Zero-based offset in the path where the problem is. */
  readonly position: number;

  constructor(message: string, position: number) {
    super(`invalid json_path at position ${position}: ${message}`);
    this.position = position;
  }
}

export const MAX_JSON_PATH_LENGTH = 512;

// Characters that end a key or a filter value; anything else, spaces included, is part of it.
const KEY = /[^.[\]?=]+/y;
const INDEX = /\[(\*|\d{1,9})\]/y;

export function parseJsonPath(source: string): JsonPath {
  if (source.length === 0) throw new JsonPathError("the path is empty", 0);
  if (source.length > MAX_JSON_PATH_LENGTH) {
    throw new JsonPathError(`the path is longer than ${MAX_JSON_PATH_LENGTH} characters`, MAX_JSON_PATH_LENGTH);
  }
  if (source.startsWith("$")) {
    throw new JsonPathError("the path starts at the document root without $ (write prefixes[*].ip_prefix)", 0);
  }
  const steps: JsonPathStep[] = [];
  let at = 0;
  const match = (re: RegExp): RegExpExecArray | null => {
    re.lastIndex = at;
    const m = re.exec(source);
    if (m) at = re.lastIndex;
    return m;
  };

  for (;;) {
    // A segment: a key (optional on the first segment only, for a document that is an array),
    // then any number of [*] / [N], each [*] optionally followed by ?key=value filters.
    const key = match(KEY);
    if (key) steps.push({ kind: "key", name: key[0] });
    else if (steps.length > 0 || source[at] !== "[") throw new JsonPathError("expected a key", at);

    let index: RegExpExecArray | null;
    let filtered = false;
    while (!filtered && (index = match(INDEX))) {
      if (index[1] !== "*") {
        steps.push({ kind: "index", index: Number(index[1]) });
        continue;
      }
      steps.push({ kind: "every" });
      while (source[at] === "?") {
        at++;
        const filterKey = match(KEY);
        if (!filterKey) throw new JsonPathError("expected a key after ?", at);
        if (source[at] !== "=") throw new JsonPathError(`expected = after ?${filterKey[0]}`, at);
        at++;
        const value = match(KEY);
        if (!value) throw new JsonPathError(`expected a value after ?${filterKey[0]}=`, at);
        steps.push({ kind: "filter", key: filterKey[0], value: value[0] });
        filtered = true;
      }
    }
    if (source[at] === "[") {
      throw new JsonPathError(filtered ? "nothing but . or ? may follow a filter" : "expected [*] or [N]", at);
    }

    if (at === source.length) return { source, steps };
    if (source[at] === "?") throw new JsonPathError("a ?key=value filter may only follow [*]", at);
    if (source[at] !== ".") throw new JsonPathError(`unexpected "${source[at]}"`, at);
    at++;
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * The values the path reaches, in document order. A node that does not fit a step (a missing
 * key, an index past the end, a key step on an array) is skipped, not an error: Google's list
 * mixes elements with `ipv4Prefix` and elements with `ipv6Prefix`.
 */
export function evaluateJsonPath(path: JsonPath, document: unknown): unknown[] {
  let nodes: unknown[] = [document];
  for (const step of path.steps) {
    const next: unknown[] = [];
    for (const node of nodes) {
      if (step.kind === "key") {
        if (isRecord(node) && Object.hasOwn(node, step.name)) next.push(node[step.name]);
      } else if (step.kind === "every") {
        // A loop, not push(...node): spreading a feed of 100 000 elements overflows the stack.
        if (Array.isArray(node)) for (const element of node) next.push(element);
      } else if (step.kind === "index") {
        if (Array.isArray(node) && step.index < node.length) next.push(node[step.index]);
      } else if (isRecord(node) && Object.hasOwn(node, step.key)) {
        const v = node[step.key];
        if ((typeof v === "string" || typeof v === "number" || typeof v === "boolean") && String(v) === step.value) {
          next.push(node);
        }
      }
    }
    nodes = next;
  }
  return nodes;
}
