import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";

/** Pages live under /console/; "/" shows the first page. */
export const BASE = "/console";

export function currentPath(): string {
  const p = window.location.pathname;
  if (p === "/" || p === BASE || p === `${BASE}/`) return "/";
  return p.startsWith(`${BASE}/`) ? p.slice(BASE.length) : p;
}

export function navigate(path: string): void {
  window.history.pushState(null, "", BASE + path);
  window.dispatchEvent(new PopStateEvent("popstate"));
}

export function usePath(): string {
  const [path, setPath] = useState(currentPath);
  useEffect(() => {
    const on = () => setPath(currentPath());
    window.addEventListener("popstate", on);
    return () => window.removeEventListener("popstate", on);
  }, []);
  return path;
}

/** The path's parameters when it matches `pattern` (`/modules/:id`), else null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const a = pattern.split("/");
  const b = path.split("/");
  if (a.length !== b.length) return null;
  const out: Record<string, string> = {};
  for (let i = 0; i < a.length; i++) {
    const part = a[i] ?? "";
    if (part.startsWith(":")) out[part.slice(1)] = decodeURIComponent(b[i] ?? "");
    else if (part !== b[i]) return null;
  }
  return out;
}

export function Link(props: { href: string; children: ComponentChildren; "aria-current"?: "page" | undefined }) {
  const { href, children, ...rest } = props;
  return (
    <a
      {...rest}
      href={BASE + href}
      onClick={(e) => {
        if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
        e.preventDefault();
        navigate(href);
      }}
    >
      {children}
    </a>
  );
}
