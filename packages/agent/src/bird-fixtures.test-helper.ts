// The captured `birdc show protocols all` outputs live beside the BIRD parser in @rlc/shared
// (src/bird/status/fixtures, with a README saying how they were captured). Agent tests reach them
// through that package, found by its name, so no test walks the directory tree by hand.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

/** @rlc/shared's directory: its entry point is dist/index.js. */
const sharedRoot = dirname(dirname(createRequire(import.meta.url).resolve("@rlc/shared")));
const sharedHelper = join(sharedRoot, "src/bird/status/fixtures.test-helper.ts");

/** The text of a fixture, `name` with its `.txt`. */
export const birdFixture = (name: string) => readFileSync(join(sharedRoot, "src/bird/status/fixtures", name), "utf8");

/** The first session of established.txt, as the parser gives it (see the shared helper). */
export const { ESTABLISHED_A1 } = (await import(sharedHelper)) as { ESTABLISHED_A1: Record<string, unknown> };
