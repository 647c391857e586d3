#!/usr/bin/env node
// `node ../../scripts/write-build-info.mjs` at the end of a workspace's build: records the
// version, commit and time in its dist/build-info.json, for a copy of the build without .git
// (in a checkout the package asks git itself). The rule is packages/shared/src/version.ts.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describeBuild } from "../packages/shared/dist/version.js";

const info = describeBuild(process.cwd());
if (info) writeFileSync(join(process.cwd(), "dist", "build-info.json"), `${JSON.stringify(info, null, 2)}\n`);
