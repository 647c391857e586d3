// tsc emits no file for a hand-placed .d.ts: the generated types are copied beside the build.
import { copyFileSync } from "node:fs";

copyFileSync(new URL("../src/schema.d.ts", import.meta.url), new URL("../dist/schema.d.ts", import.meta.url));
