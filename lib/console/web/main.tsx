/** The console's entry: the session, the frame (header, navigation) and the page for the URL. */
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import type { ComponentType } from "preact";
import "./styles.css";
import { loadSession, setSession, can, isAdmin, session } from "./session.ts";
import { get, signInAgain } from "./api.ts";
import { Link, useLocation } from "./router.tsx";
import { ErrorNote } from "./components.tsx";
import Overview from "./pages/overview.tsx";
import Reports from "./pages/reports.tsx";
import Explorer from "./pages/explorer.tsx";
import Plans from "./pages/plans.tsx";
import Purchases from "./pages/purchases.tsx";
import Estimates from "./pages/estimates.tsx";
import Connections from "./pages/connections.tsx";
import Support from "./pages/support.tsx";
import Budgets from "./pages/budgets.tsx";
import Notifications from "./pages/notifications.tsx";
import Settings from "./pages/settings.tsx";

interface Section {
  path: string;
  label: string;
  page: ComponentType;
  /** Shown only when the session may use it (the API refuses it anyway). */
  allowed: () => boolean;
}

export const SECTIONS: Section[] = [
  { path: "/app/", label: "Overview", page: Overview, allowed: () => can("reports:read") },
  { path: "/app/reports", label: "Reports", page: Reports, allowed: () => can("reports:read") },
  { path: "/app/explorer", label: "Cost explorer", page: Explorer, allowed: () => can("reports:read") },
  { path: "/app/plans", label: "Plans", page: Plans, allowed: () => can("templates:read") },
  { path: "/app/purchases", label: "Purchases", page: Purchases, allowed: () => can("purchases:read") },
  { path: "/app/estimates", label: "Estimates", page: Estimates, allowed: () => can("estimates:read") },
  { path: "/app/budgets", label: "Budgets", page: Budgets, allowed: () => can("budgets:read") },
  { path: "/app/notifications", label: "Notifications", page: Notifications, allowed: () => can("events:read") },
  { path: "/app/connections", label: "Connections", page: Connections, allowed: () => can("connections:read") },
  { path: "/app/support", label: "Support", page: Support, allowed: () => can("support:write") },
  { path: "/app/settings", label: "Settings", page: Settings, allowed: () => isAdmin() },
];

function sectionOf(path: string): Section | undefined {
  if (path === "/app" || path === "/app/") return SECTIONS[0];
  return SECTIONS.find((s) => s.path !== "/app/" && (path === s.path || path.startsWith(`${s.path}/`)));
}

async function signOut() {
  try {
    await fetch("/app/logout", { method: "POST", credentials: "same-origin", headers: { "x-csrf-token": session().csrf } });
  } catch {
    // The sign-out below is where the user lands either way.
  }
  location.assign("/app/login");
}

function Header(props: { orgName: string | null }) {
  const [busy, setBusy] = useState(false);
  return (
    <header class="top">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <span class="brand">commitops</span>
      <span class="org" id="org-name" title="Organization">
        {props.orgName ?? "…"}
      </span>
      <a class="switch-org" href={`/app/login?return=${encodeURIComponent(location.pathname)}`}>
        Switch organization
      </a>
      <button
        type="button"
        class="secondary"
        id="sign-out"
        disabled={busy}
        onClick={() => {
          setBusy(true);
          void signOut();
        }}
      >
        Sign out
      </button>
    </header>
  );
}

function Nav(props: { current: Section | undefined }) {
  return (
    <nav class="side" aria-label="Sections">
      <ul>
        {SECTIONS.filter((s) => s.allowed()).map((s) => (
          <li key={s.path}>
            <Link href={s.path} aria-current={props.current === s ? "page" : undefined}>
              {s.label}
            </Link>
          </li>
        ))}
      </ul>
    </nav>
  );
}

function App() {
  const loc = useLocation();
  const [orgName, setOrgName] = useState<string | null>(null);
  useEffect(() => {
    get("/beta/v1/org/{org_id}").then(
      (r) => setOrgName((r.data as { name?: string }).name ?? session().orgId),
      () => setOrgName(session().orgId),
    );
  }, []);
  // Focus moves to the new page's heading, so screen readers announce the navigation.
  useEffect(() => {
    const h = document.getElementById("page-title");
    if (h && document.activeElement !== h && history.state !== null) h.focus();
  }, [loc.path]);
  const section = sectionOf(loc.path);
  const Page = section?.page;
  return (
    <div class="frame">
      <Header orgName={orgName} />
      <Nav current={section} />
      <main id="main" tabIndex={-1}>
        {!section || !Page ? (
          <section class="page">
            <h1 id="page-title">Page not found</h1>
            <p>
              There is no console page at {loc.path}. <Link href="/app/">Go to the overview</Link>.
            </p>
          </section>
        ) : !section.allowed() ? (
          <section class="page">
            <h1 id="page-title">{section.label}</h1>
            <p>Your role in this organization does not include this page. Ask an administrator of the organization if you need it.</p>
          </section>
        ) : (
          <Page />
        )}
      </main>
    </div>
  );
}

async function boot() {
  const root = document.getElementById("app")!;
  try {
    const s = await loadSession();
    if (!s) return signInAgain();
    setSession(s);
    root.textContent = "";
    render(<App />, root);
  } catch (e) {
    root.textContent = "";
    render(<ErrorNote error={e} retry={() => location.reload()} />, root);
  }
}

void boot();
