// Records the build's version (git tags), commit and time in dist/build-info.json for /version.
import { writeFileSync } from "node:fs";
import { describeVersion } from "../dist/lib/build-info.js";

const info = describeVersion(new URL("..", import.meta.url).pathname);
writeFileSync(new URL("../dist/build-info.json", import.meta.url), `${JSON.stringify(info, null, 2)}\n`);
