// The runtime import graph of packages/*/src (type-only imports left out: they vanish at build)
// and its cycles, for the test that keeps the house free of them (test/package/import-cycles);
// with type imports, for the test of the controller's areas' order (test/package/import-order).
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const SOURCE = /\.tsx?$/;
const LEFT_OUT = /\.test\.tsx?$|\.d\.ts$|\.test-helper\.ts$/;
const IMPORT = /^(import|export)\s([^;]*?)\sfrom\s+"(\.[^"]+)"/gms;

/**
 * Every source file under `root`/packages/*\/src, with the files it imports at run time; with
 * `types: true`, also those it imports for their types only (a dependency all the same, which
 * the areas' order of test/package/import-order counts).
 */
export function importGraph(root, { types = false } = {}) {
  const files = [];
  const walk = (dir) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) {
        if (name !== "node_modules" && name !== "dist") walk(path);
      } else if (SOURCE.test(name) && !LEFT_OUT.test(name)) files.push(path);
    }
  };
  for (const pkg of readdirSync(join(root, "packages"))) if (existsSync(join(root, "packages", pkg, "src"))) walk(join(root, "packages", pkg, "src"));
  const graph = new Map();
  for (const file of files) {
    const deps = [];
    for (const m of readFileSync(file, "utf8").matchAll(IMPORT)) {
      if (!types && m[2].trimStart().startsWith("type ")) continue;
      const target = resolve(dirname(file), m[3]).replace(/\.js$/, "");
      const found = [`${target}.ts`, `${target}.tsx`, join(target, "index.ts")].find((p) => existsSync(p));
      if (found) deps.push(relative(root, found));
    }
    graph.set(relative(root, file), deps);
  }
  return graph;
}

/** The strongly connected components of more than one file (Tarjan): each is an import cycle. */
export function importCycles(graph) {
  let next = 0;
  const stack = [];
  const onStack = new Set();
  const index = new Map();
  const low = new Map();
  const cycles = [];
  const visit = (v) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
    }
    if (low.get(v) === index.get(v)) {
      const component = [];
      let w;
      do {
        w = stack.pop();
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) cycles.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return cycles;
}
