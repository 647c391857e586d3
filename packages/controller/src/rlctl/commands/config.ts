import type { Command } from "commander";
import { outputOf } from "../context.js";
import { usageError } from "../exit-codes.js";
import { fieldColumns, print } from "../output.js";
import { configPath, readConfig, writeConfig } from "../profiles.js";

/** A key shown by its prefix only: `rlk_ab12cd…`. */
const masked = (key: string | undefined) => (key ? `${key.split("_").slice(0, 2).join("_")}_…` : null);

/** The config file and where it is, when it has a profile `name` (a usage error when not). */
async function configWith(name: string) {
  const path = configPath();
  const file = await readConfig(path);
  if (!file.profiles[name]) throw usageError(`no profile named ${name} in ${path}`);
  return { path, file };
}

export function configCommand(program: Command): void {
  const config = program
    .command("config")
    .description(`profiles (controller URL and key) in ${configPath().replace(process.env.HOME ?? "\0", "~")}: ls, set, use, rm`);

  config
    .command("ls")
    .description("list profiles (keys masked)")
    .action(async (_opts: unknown, cmd: Command) => {
      const file = await readConfig(configPath());
      const rows = Object.entries(file.profiles).map(([name, p]) => ({ name, current: name === file.current, url: p.url, api_key: masked(p.api_key) }));
      print(outputOf(cmd), rows, rows, [
        { header: "", value: (r) => (r.current ? "*" : " ") },
        ...fieldColumns<(typeof rows)[number]>({ PROFILE: "name", URL: "url", KEY: "api_key" }),
      ]);
    });

  config
    .command("set <profile>")
    .description("add or change a profile; the first one becomes current")
    .option("--url <url>", "the controller, e.g. https://rl.example.net")
    .option("--api-key <key>", "rlk_… (stored in the file, mode 0600)")
    .action(async (name: string, _opts: unknown, cmd: Command) => {
      // The program's own --url and --api-key (the connection of every command) take these
      // flags wherever they stand on the line, so they are read with the globals.
      const opts = cmd.optsWithGlobals<{ url?: string; apiKey?: string }>();
      const path = configPath();
      const file = await readConfig(path);
      const before = file.profiles[name];
      const url = opts.url ?? before?.url;
      if (!url) throw usageError(`profile ${name} needs --url`);
      if (!/^https?:\/\//.test(url)) throw usageError(`--url ${url}: give an http:// or https:// URL`);
      const apiKey = opts.apiKey ?? before?.api_key;
      file.profiles[name] = { url, ...(apiKey ? { api_key: apiKey } : {}) };
      file.current ??= name;
      await writeConfig(path, file);
      process.stderr.write(`profile ${name} saved in ${path}${file.current === name ? " (current)" : ""}\n`);
    });

  config
    .command("use <profile>")
    .description("make a profile the current one")
    .action(async (name: string) => {
      const { path, file } = await configWith(name);
      await writeConfig(path, { ...file, current: name });
      process.stderr.write(`now using ${name}\n`);
    });

  config
    .command("rm <profile>")
    .description("delete a profile")
    .action(async (name: string) => {
      const { path, file } = await configWith(name);
      delete file.profiles[name];
      if (file.current === name) delete file.current;
      await writeConfig(path, file);
    });
}
