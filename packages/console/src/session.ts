import { createContext } from "preact";
import { useContext } from "preact/hooks";
import type { Api } from "./api.js";

export type Role = "viewer" | "operator" | "admin" | "superadmin" | "node";
const RANK: Record<Role, number> = { node: 0, viewer: 1, operator: 2, admin: 3, superadmin: 4 };

export interface SessionInfo {
  tenant_id: string;
  tenant_name: string;
  role: Role;
  key_id: string;
  key_prefix: string;
  permissions: string[];
}

export interface Session {
  api: Api;
  info: SessionInfo;
  /** Whether the key's role is at least `role` (what the API checks on each write). */
  can(role: Role): boolean;
  signOut(): void;
}

export const SessionContext = createContext<Session | null>(null);

export function useSession(): Session {
  const s = useContext(SessionContext);
  if (!s) throw new Error("useSession outside a signed-in page");
  return s;
}

export function makeSession(api: Api, info: SessionInfo, signOut: () => void): Session {
  return { api, info, signOut, can: (role) => RANK[info.role] >= RANK[role] };
}

/**
 * The key lives in sessionStorage only: gone when the tab closes, never in a URL or a cookie,
 * so no request the browser makes on its own carries it.
 */
export const KEY_STORAGE = "rlc.apiKey";
const INFO_STORAGE = "rlc.session";
export const storedKey = () => sessionStorage.getItem(KEY_STORAGE);
export function storeKey(key: string | null, info?: SessionInfo) {
  if (!key) {
    sessionStorage.removeItem(KEY_STORAGE);
    sessionStorage.removeItem(INFO_STORAGE);
    return;
  }
  sessionStorage.setItem(KEY_STORAGE, key);
  if (info) sessionStorage.setItem(INFO_STORAGE, JSON.stringify(info));
}

/**
 * What the key was last seen to be (tenant, role), so a reload shows the page at once while the
 * key is checked again; the role only decides which buttons to draw, the API checks every call.
 */
export function storedInfo(): SessionInfo | null {
  try {
    return JSON.parse(sessionStorage.getItem(INFO_STORAGE) ?? "null") as SessionInfo | null;
  } catch {
    return null;
  }
}
