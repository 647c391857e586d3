// Writes src/schema.d.ts from the committed openapi.json (part of the build): the types are generated,
// never committed, so they cannot drift from the document they describe.
import { readFile, writeFile } from "node:fs/promises";
import { typesOf } from "./snapshot.mjs";

const doc = JSON.parse(await readFile(new URL("../openapi.json", import.meta.url), "utf8"));
await writeFile(new URL("../src/schema.d.ts", import.meta.url), await typesOf(doc));
