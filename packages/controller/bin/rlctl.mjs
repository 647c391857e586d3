#!/usr/bin/env node
// npm links a package's bin at install time, when dist/ is not built yet; this launcher is
// committed so the link exists after the first `npm install` and `npx rlctl` works once
// `npm run build` has run.
import { existsSync } from "node:fs";

const main = new URL("../dist/rlctl/main.js", import.meta.url);
if (!existsSync(main)) {
  process.stderr.write("rlctl is not built yet: run npm run build (in the repository root)\n");
  process.exit(2);
}
await import(main.href);
