// The control files of rl-agent's .deb. Maintainer scripts stay plain POSIX sh and idempotent:
// dpkg runs them again on every upgrade.
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { root } from "./lib.mjs";

/** /etc/rl-agent/agent.env, written from the agent's own list of variables (built first). */
export async function envFileText() {
  const { envFileTemplate } = await import(pathToFileURL(join(root, "packages/agent/dist/variables.js")).href);
  return envFileTemplate();
}

/** rl-agent(1), from the same text as `rl-agent --help`. */
export async function manPage(version) {
  const { usage } = await import(pathToFileURL(join(root, "packages/agent/dist/help.js")).href);
  const roff = (text) => text.replaceAll("\\", "\\e").replace(/^([.'])/gm, "\\&$1");
  return `.TH RL-AGENT 1 "" "rl-agent ${version}" "User Commands"
.SH NAME
rl-agent \\- keeps BIRD 2 in sync with the route-list controller
.SH SYNOPSIS
.B rl-agent
.I command
[options]
.SH DESCRIPTION
.nf
${roff(usage())}.fi
.SH FILES
/etc/rl-agent/agent.env, /var/lib/rl-agent, /usr/share/doc/rl-agent/README.md
`;
}

export function debianChangelog(version) {
  const date = new Date(Number(process.env.SOURCE_DATE_EPOCH ?? Math.floor(Date.now() / 1000)) * 1000).toUTCString().replace("GMT", "+0000");
  return `rl-agent (${version}) unstable; urgency=medium

  * Built from the route-list-controller repository by npm run package.

 -- ${MAINTAINER}  ${date}
`;
}

const MAINTAINER = "route-list-controller maintainers <maintainers@route-list-controller.example.org>";

// The executable is Node's single executable application: Node (which links its own zlib and
// is built without PIE) with the agent inside; the scripts call systemctl only where systemd runs.
export const LINTIAN_OVERRIDES = `rl-agent: embedded-library zlib [usr/bin/rl-agent]
rl-agent: hardening-no-pie [usr/bin/rl-agent]
rl-agent: maintainer-script-calls-systemctl *
`;

export function debianControl({ version, arch, installedKb }) {
  return `Package: rl-agent
Version: ${version}
Architecture: ${arch}
Maintainer: ${MAINTAINER}
Installed-Size: ${installedKb}
Depends: adduser, libc6 (>= 2.28), libgcc-s1, libstdc++6 (>= 10)
Recommends: bird2
Section: net
Priority: optional
Description: route-list controller agent for BIRD 2
 Pulls the router's signed route bundle from the route-list controller,
 verifies it, renders BIRD 2 configuration, reloads BIRD with a
 commit-confirmed reload and reports BGP sessions back. A single
 executable: it needs no Node.js on the router.
`;
}

const postinst = `#!/bin/sh
set -e
if [ "$1" = configure ]; then
  install -d -m 0700 /var/lib/rl-agent
  if ! getent passwd rl-agent >/dev/null; then
    adduser --system --group --home /var/lib/rl-agent --no-create-home --shell /usr/sbin/nologin rl-agent >/dev/null
  fi
  # BIRD's control socket is root:bird 0660 on Debian.
  if getent group bird >/dev/null; then
    adduser rl-agent bird >/dev/null 2>&1 || true
  fi
  install -d -o rl-agent -g rl-agent -m 0700 /var/lib/rl-agent
  # The file holds the enrollment token: readable by the agent, not by everyone.
  chown root:rl-agent /etc/rl-agent/agent.env
  chmod 0640 /etc/rl-agent/agent.env
  if [ -d /run/systemd/system ]; then
    systemctl daemon-reload >/dev/null 2>&1 || true
    # Enabled, not started: it needs RL_CONTROLLER_URL and a token first.
    systemctl enable rl-agent.service >/dev/null 2>&1 || true
    if [ -n "$2" ]; then
      systemctl try-restart rl-agent.service >/dev/null 2>&1 || true
    fi
  fi
fi
exit 0
`;

const prerm = `#!/bin/sh
set -e
if [ -d /run/systemd/system ] && { [ "$1" = remove ] || [ "$1" = deconfigure ]; }; then
  systemctl stop rl-agent.service >/dev/null 2>&1 || true
  systemctl disable rl-agent.service >/dev/null 2>&1 || true
fi
exit 0
`;

// remove: state and config stay (a reinstall finds the node key); purge: everything goes.
const postrm = `#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload >/dev/null 2>&1 || true
fi
if [ "$1" = purge ]; then
  rm -rf /var/lib/rl-agent /etc/rl-agent
  if getent passwd rl-agent >/dev/null; then
    deluser --system --quiet rl-agent >/dev/null 2>&1 || userdel rl-agent >/dev/null 2>&1 || true
  fi
  if getent group rl-agent >/dev/null; then
    delgroup --system --quiet rl-agent >/dev/null 2>&1 || groupdel rl-agent >/dev/null 2>&1 || true
  fi
fi
exit 0
`;

export function debianScripts() {
  return { postinst, prerm, postrm };
}
