import { useEffect, useState } from "preact/hooks";
import { ApiError, connect, ok } from "./api.js";
import { ApiKeysPage } from "./pages/api-keys.js";
import { AuditPage } from "./pages/audit.js";
import { CommunitiesPage } from "./pages/communities.js";
import { DohProfilesPage } from "./pages/doh-profiles.js";
import { JobsPage } from "./pages/jobs.js";
import { LookupPage } from "./pages/lookup.js";
import { MaintenancePage } from "./pages/maintenance.js";
import { ModulePage } from "./pages/module.js";
import { ModulesPage } from "./pages/modules.js";
import { PeerPage, PeersPage } from "./pages/peers.js";
import { RefreshPage } from "./pages/refresh.js";
import { DiffPage, RevisionsPage } from "./pages/revisions.js";
import { RouterPage } from "./pages/router.js";
import { RoutersPage } from "./pages/routers.js";
import { SettingsPage } from "./pages/settings.js";
import { SignIn } from "./pages/sign-in.js";
import { SigningKeysPage } from "./pages/signing-keys.js";
import { TenantsPage } from "./pages/tenants.js";
import { Link, match, usePath } from "./router.js";
import { makeSession, type Role, type Session, SessionContext, type SessionInfo, storedInfo, storedKey, storeKey } from "./session.js";
import { ThemeToggle } from "./theme.js";

/**
 * The menu: each page with the least role that sees it (the API's role for reading it);
 * "deployment" pages are for tenant `default`'s superadmins only.
 */
const NAV: readonly (readonly [string, string, (Role | "deployment")?])[] = [
  ["/modules", "Modules"],
  ["/refresh", "Refresh"],
  ["/revisions", "Revisions"],
  ["/routers", "Routers"],
  ["/peers", "Peers"],
  ["/communities", "Communities"],
  ["/doh-profiles", "DoH"],
  ["/lookup", "Lookup"],
  ["/jobs", "Jobs"],
  ["/audit", "Audit"],
  ["/api-keys", "API keys", "operator"],
  ["/maintenance", "Maintenance", "operator"],
  ["/signing-keys", "Signing keys"],
  ["/tenants", "Tenants", "deployment"],
  ["/settings", "Settings"],
];

function allowed(session: Session, role: Role | "deployment" | undefined): boolean {
  if (role === "deployment") return session.info.role === "superadmin" && session.info.tenant_name === "default";
  return !role || session.can(role);
}

function gate(session: Session, path: string, page: preact.JSX.Element) {
  const entry = NAV.find(([href]) => path === href || path.startsWith(`${href}/`));
  return allowed(session, entry?.[2]) ? page : <p class="page">This page is not for a {session.info.role} key.</p>;
}

function routeOf(path: string) {
  let p: Record<string, string> | null;
  if (path === "/communities") return <CommunitiesPage />;
  if (path === "/doh-profiles") return <DohProfilesPage />;
  if (path === "/api-keys") return <ApiKeysPage />;
  if (path === "/maintenance") return <MaintenancePage />;
  if (path === "/signing-keys") return <SigningKeysPage />;
  if (path === "/tenants") return <TenantsPage />;
  if (path === "/peers") return <PeersPage />;
  if ((p = match("/peers/:id", path))) return <PeerPage id={p.id ?? ""} />;
  if (path === "/" || path === "/modules") return <ModulesPage />;
  if ((p = match("/modules/:id", path))) return <ModulePage id={p.id ?? ""} />;
  if (path === "/refresh") return <RefreshPage />;
  if (path === "/revisions") return <RevisionsPage />;
  if ((p = match("/revisions/:a/diff/:b", path))) return <DiffPage from={Number(p.a)} to={Number(p.b)} />;
  if (path === "/routers") return <RoutersPage />;
  if ((p = match("/routers/:id", path))) return <RouterPage id={p.id ?? ""} />;
  if (path === "/lookup") return <LookupPage />;
  if (path === "/jobs") return <JobsPage />;
  if (path === "/audit") return <AuditPage />;
  if (path === "/settings") return <SettingsPage />;
  return (
    <p class="page">
      No such page. <Link href="/modules">Modules</Link>
    </p>
  );
}

export function App() {
  const path = usePath();
  const [session, setSession] = useState<Session | null>(() => {
    const key = storedKey();
    const info = storedInfo();
    return key && info ? begin(key, info) : null;
  });
  const [checking, setChecking] = useState(Boolean(storedKey()) && !session);
  const [menuOpen, setMenuOpen] = useState(false);

  function begin(key: string, info: SessionInfo): Session {
    return makeSession(connect(key), info, () => {
      storeKey(null);
      setSession(null);
    });
  }

  async function signIn(key: string) {
    const info = (await ok(connect(key).GET("/v1/auth/session", {}))) as SessionInfo;
    storeKey(key, info);
    setSession(begin(key, info));
  }

  // A stored key is checked again on every load (revoked, expired, role changed).
  useEffect(() => {
    const key = storedKey();
    if (!key) return;
    signIn(key)
      .catch((error: Error) => {
        // Only a refused key signs out; a busy or unreachable controller (503, a lost
        // connection) keeps the remembered session, and the pages show their own errors.
        if ((error instanceof ApiError && (error.status === 401 || error.status === 403)) || !storedInfo()) {
          storeKey(null);
          setSession(null);
        }
      })
      .finally(() => setChecking(false));
  }, []);
  useEffect(() => setMenuOpen(false), [path]);

  if (checking) return <p class="page muted">Signing in…</p>;
  if (!session) return <SignIn onSignIn={signIn} />;
  const section = `/${path.split("/")[1] || "modules"}`;
  return (
    <SessionContext.Provider value={session}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <strong class="brand">route lists</strong>
        <button type="button" class="menu" aria-expanded={menuOpen} aria-controls="nav" onClick={() => setMenuOpen(!menuOpen)}>
          Menu
        </button>
        <nav id="nav" class={menuOpen ? "open" : ""} aria-label="Pages">
          {NAV.filter(([, , role]) => allowed(session, role)).map(([href, label]) => (
            <Link key={href} href={href} aria-current={section === href ? "page" : undefined}>
              {label}
            </Link>
          ))}
        </nav>
        <span class="who" data-testid="role">
          {session.info.tenant_name} · {session.info.role}
        </span>
        <ThemeToggle />
        <button type="button" onClick={session.signOut}>
          Sign out
        </button>
      </header>
      <main id="main">{gate(session, path, routeOf(path))}</main>
    </SessionContext.Provider>
  );
}
