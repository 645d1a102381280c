import { expect, test } from "bun:test";
import { loadConfig } from "../../lib/config.ts";
import { clearedSessionCookie, cookieName, csrfToken, csrfValid, readBrowserSecret, sessionCookie } from "../../lib/oauth/sessions.ts";

test("over https the login cookie is Secure with the __Host- prefix; over http it is not Secure", () => {
  const https = loadConfig({ PUBLIC_URL: "https://commitops.example.com" });
  expect(cookieName(https)).toBe("__Host-commitops_login");
  const c = sessionCookie(https, "cos_x");
  for (const part of ["Path=/", "HttpOnly", "SameSite=Lax", "Secure"]) expect(c).toContain(part);
  expect(clearedSessionCookie(https)).toContain("Secure");
  const http = loadConfig({ PUBLIC_URL: "http://localhost:3000" });
  expect(cookieName(http)).toBe("commitops_login");
  expect(sessionCookie(http, "cos_x")).not.toContain("Secure");
});

test("the CSRF token is bound to the cookie secret", () => {
  const a = "cos_" + "a".repeat(43);
  const b = "cos_" + "b".repeat(43);
  expect(csrfValid(a, csrfToken(a))).toBe(true);
  expect(csrfValid(b, csrfToken(a))).toBe(false);
  expect(csrfValid(null, csrfToken(a))).toBe(false);
  expect(csrfValid(a, "")).toBe(false);
  expect(csrfValid(a, undefined)).toBe(false);
});

test("only well-formed cookie values are read", () => {
  const cfg = loadConfig({ PUBLIC_URL: "http://localhost" });
  const ok = "cos_" + "Z".repeat(43);
  expect(readBrowserSecret(cfg, new Headers({ cookie: `other=1; commitops_login=${ok}` }))).toBe(ok);
  expect(readBrowserSecret(cfg, new Headers({ cookie: "commitops_login=<script>" }))).toBeNull();
  expect(readBrowserSecret(cfg, new Headers({}))).toBeNull();
});
