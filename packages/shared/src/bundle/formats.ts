import { BUNDLE_FORMAT_V2 } from "./bundle-v2.js";
import { BUNDLE_FORMAT } from "./sign.js";

/**
 * What an agent announces it accepts, so that controller and agent can be upgraded in either
 * order: the bundle formats it reads and the features it knows. The controller serves each agent
 * the newest format it accepts and never sends a feature it has not announced; an agent that
 * announces nothing is one of the release before announcements, which reads `rl-bundle/1` only.
 */
export interface AgentAnnouncement {
  bundle_formats: string[];
  capabilities: string[];
}

/** Every bundle format this release can write, newest first. */
export const BUNDLE_FORMATS = [BUNDLE_FORMAT_V2, BUNDLE_FORMAT] as const;
export type BundleFormatName = (typeof BUNDLE_FORMATS)[number];

/**
 * Features a controller sends only to an agent that announced them.
 * - `delta`: an `rl-bundle/2` carrying the edit script from the revision the agent runs.
 * - `force_confirm`: the signed flag that skips the probation's session and route checks.
 */
export const AGENT_CAPABILITIES = ["delta", "force_confirm"] as const;
export type AgentCapability = (typeof AGENT_CAPABILITIES)[number];

/** What this release's agent announces. */
export const CURRENT_ANNOUNCEMENT: AgentAnnouncement = { bundle_formats: [...BUNDLE_FORMATS], capabilities: [...AGENT_CAPABILITIES] };

/**
 * The HTTP request headers that carry an announcement (comma-separated): headers rather than body
 * fields, because a controller of the release before refuses a body field it does not know and
 * ignores a header it does not know.
 */
export const ANNOUNCEMENT_HEADERS = { bundleFormats: "rl-bundle-formats", capabilities: "rl-agent-capabilities" } as const;

const TOKEN = /^[a-z0-9][a-z0-9_./-]{0,39}$/;

/** A list as announced (a header's comma-separated text, or the proto's repeated field), tokens only, at most 16. */
export function announcedList(value: string | readonly string[] | null | undefined): string[] {
  if (value === null || value === undefined) return [];
  const items = typeof value === "string" ? value.split(",") : value.flatMap((v) => v.split(","));
  const seen = new Set<string>();
  for (const raw of items) {
    const item = raw.trim().toLowerCase();
    if (TOKEN.test(item)) seen.add(item);
    if (seen.size === 16) break;
  }
  return [...seen];
}

/** The announcement in a request, or null when it carries none (an agent of the release before). */
export function announcementOf(
  formats: string | readonly string[] | null | undefined,
  capabilities: string | readonly string[] | null | undefined,
): AgentAnnouncement | null {
  const bundle_formats = announcedList(formats);
  if (bundle_formats.length === 0) return null;
  return { bundle_formats, capabilities: announcedList(capabilities) };
}

/** The HTTP headers of an announcement. */
export function announcementHeaders(a: AgentAnnouncement | null): Record<string, string> {
  if (!a) return {};
  return { [ANNOUNCEMENT_HEADERS.bundleFormats]: a.bundle_formats.join(", "), [ANNOUNCEMENT_HEADERS.capabilities]: a.capabilities.join(", ") };
}

/**
 * The newest format in `served` (what this controller is set to write, newest first) that the
 * agent accepts: `rl-bundle/1` for an agent that announced nothing; null when there is none in common.
 */
export function bundleFormatFor(announced: AgentAnnouncement | null, served: readonly BundleFormatName[] = BUNDLE_FORMATS): BundleFormatName | null {
  const accepts = announced?.bundle_formats ?? [BUNDLE_FORMAT];
  return served.find((f) => accepts.includes(f)) ?? null;
}

/** Whether the agent announced `capability` (an agent that announced nothing knows none). */
export function hasCapability(announced: AgentAnnouncement | null, capability: AgentCapability): boolean {
  return announced?.capabilities.includes(capability) ?? false;
}

/** Whether an agent that announced this is older than the bundle formats this controller writes first. */
export function isOldAgent(announced: AgentAnnouncement | null): boolean {
  return !announced?.bundle_formats.includes(BUNDLE_FORMATS[0]);
}
