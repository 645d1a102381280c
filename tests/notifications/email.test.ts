/**
 * Email notifications end to end: events written in real transactions queue one outbox row per
 * recipient (preferences, role defaults, admins always told of a disabled endpoint), the sender
 * delivers them to a real SMTP server on loopback (HTML escaped, a text part, the console link,
 * a stable Message-ID), retries a 4xx answer or a server that is down until it is back (each
 * email delivered once), gives up after 3 days, and never logs addresses or SMTP credentials.
 */
import { afterAll, beforeAll, beforeEach, expect, test } from "bun:test";
import { describeEachDb } from "../helpers/db.ts";
import { useTestApp } from "../helpers/app.ts";
import { createServices, type Services } from "../../lib/services.ts";
import { createLogger } from "../../lib/log.ts";
import { openDb, type DatabaseHandle } from "../../lib/db/index.ts";
import { emitEvent } from "../../lib/events/emit.ts";
import { deliverEmails, emailBackoffCeilingMs, emailBackoffMs, EMAIL_LEASE_MS, EMAIL_RETRY_WINDOW_MS } from "../../lib/notifications/delivery.ts";
import { mailErrorText } from "../../lib/notifications/mailer.ts";
import { emailDeliveryJob } from "../../jobs/email-delivery.ts";
import { jobs } from "../../jobs/index.ts";
import { validBug } from "../support/fixtures.ts";
import { startSmtpServer, type TestSmtpServer } from "./smtp.ts";
import { addTestMember, deliverAll, emit, orgWithMembers, outboxOf, purchaseData, recipientsOf } from "./fixtures.ts";

const HOUR = 3_600_000;

test("email backoff: 30 s · 2^(n−1) up to an hour, full jitter, never under 5 s", () => {
  expect([1, 2, 3, 4, 5, 7, 8, 30].map(emailBackoffCeilingMs)).toEqual([30_000, 60_000, 120_000, 240_000, 480_000, 1_920_000, HOUR, HOUR]);
  for (let n = 1; n < 20; n++) {
    expect(emailBackoffMs(n, () => 0)).toBe(5_000);
    expect(emailBackoffMs(n, () => 0.999999)).toBe(Math.max(5_000, Math.floor(0.999999 * emailBackoffCeilingMs(n))));
  }
});

test("an SMTP error's text loses addresses and the URL's credentials", () => {
  const url = "smtp://mailer%40corp:s3cr3t-pass@mail.example.com:587";
  const text = mailErrorText({ message: "Invalid login for mailer@corp with s3cr3t-pass: 451 <alice@example.com> try later" }, url);
  expect(text).not.toContain("s3cr3t-pass");
  expect(text).not.toContain("alice@example.com");
  expect(text).not.toContain("mailer@corp");
  expect(text).toContain("451");
});

test("the email job is registered and runs every 5 seconds", () => {
  expect(jobs).toContain(emailDeliveryJob);
  expect(emailDeliveryJob.pattern).toBe("*/5 * * * * *");
});

describeEachDb("notifications: email", (driver) => {
  let clock = new Date();
  const t = useTestApp(driver, { now: () => clock });
  let smtp: TestSmtpServer;
  let seq = 0;
  const extraHandles: DatabaseHandle[] = [];

  beforeAll(async () => {
    smtp = await startSmtpServer();
    t.s.config.smtpUrl = smtp.url;
  });
  afterAll(async () => {
    await smtp?.stop();
    for (const h of extraHandles) await h.close();
  });
  beforeEach(async () => {
    clock = new Date();
    smtp.reset();
    // Each test starts with an empty outbox: earlier tests' rows are out of the way.
    await t.s.handle.query("UPDATE email_notifications SET status = 'failed' WHERE status = 'pending'");
  });

  const later = (ms: number) => (clock = new Date(clock.getTime() + ms));
  const services = (config: Partial<Services["config"]>, log = createLogger("silent")) => createServices(t.s.handle, { ...t.s.config, ...config }, log, { now: () => clock });

  test("recipients follow each member's preferences and their role's defaults; admins always hear of a disabled endpoint", async () => {
    const org = await orgWithMembers(t.s, `prefs ${++seq}`, { adminA: "admin", adminB: "admin", memberM: "member", memberN: "member", viewerV: "viewer" });
    const m = org.members;
    const put = async (who: keyof typeof m, types: string[]) => {
      const r = await t.request("PUT", `/beta/v1/org/${org.id}/notification-preferences`, { key: m[who]!.key, body: { email_event_types: types } });
      expect(r.status).toBe(200);
    };
    await put("adminB", ["support.ticket_created"]);
    await put("memberN", ["budget.threshold_crossed", "purchase.pending_approval"]);
    await put("viewerV", ["anomaly.detected"]);

    const expectTo = async (type: Parameters<typeof emit>[2], who: (keyof typeof m)[]) => {
      const e = await emit(t.s, org.id, type, { message: "x" });
      expect({ type, to: await recipientsOf(t.s, e.id) }).toEqual({ type, to: who.map((w) => m[w]!.email).sort() });
    };
    // adminA never chose: the admin defaults. memberM never chose: nothing.
    await expectTo("purchase.pending_approval", ["adminA", "memberN"]);
    await expectTo("billing_sync.failed", ["adminA"]);
    await expectTo("budget.threshold_crossed", ["adminA", "memberN"]);
    await expectTo("anomaly.detected", ["viewerV"]);
    await expectTo("support.ticket_created", ["adminB"]);
    await expectTo("purchase.confirmed", []);
    await expectTo("period.finalized", []);
    // adminB chose only tickets, and is emailed anyway.
    await expectTo("webhook_endpoint.disabled", ["adminA", "adminB"]);

    // An admin who chose nothing still hears of a disabled endpoint; defaults follow the role.
    await put("adminA", []);
    await expectTo("purchase.pending_approval", ["memberN"]);
    await expectTo("webhook_endpoint.disabled", ["adminA", "adminB"]);
    await t.request("PATCH", `/beta/v1/org/${org.id}/members/${m.memberM!.userId}`, { key: m.adminB!.key, body: { role: "admin" } });
    await expectTo("billing_sync.failed", ["memberM"]);

    // Delivered to exactly those addresses.
    const report = await deliverAll(t.s);
    expect(report.failed).toBe(0);
    const delivered = smtp.mails.flatMap((mail) => mail.to).sort();
    const queued = (await outboxOf(t.s, { orgId: org.id })).map((r) => r.to_address).sort();
    expect(delivered).toEqual(queued);
    expect((await outboxOf(t.s, { orgId: org.id })).every((r) => r.status === "sent" && r.attempts === 1 && r.sent_at)).toBe(true);
  });

  test("preferences are per organization: a choice in one org does not change another's", async () => {
    const a = await orgWithMembers(t.s, `iso a ${++seq}`, { admin: "admin" });
    const b = await orgWithMembers(t.s, `iso b ${seq}`, { other: "admin" });
    const inB = await addTestMember(t.s, b.id, "same", "admin", a.members.admin!);
    const r = await t.request("PUT", `/beta/v1/org/${a.id}/notification-preferences`, { key: a.members.admin!.key, body: { email_event_types: [] } });
    expect(r.status).toBe(200);
    const inA = await emit(t.s, a.id, "billing_sync.failed");
    const inOrgB = await emit(t.s, b.id, "billing_sync.failed");
    expect(await recipientsOf(t.s, inA.id)).toEqual([]);
    expect(await recipientsOf(t.s, inOrgB.id)).toEqual([b.members.other!.email, inB.email].sort());
  });

  test("queued in the event's transaction: a rolled back event emails no one, a real flow (a support ticket) emails who chose it", async () => {
    const org = await orgWithMembers(t.s, `tx ${++seq}`, { admin: "admin", member: "member" });
    await expect(
      t.s.db.transaction(async (tx) => {
        await emitEvent(tx, { orgId: org.id, type: "billing_sync.failed", occurredAt: clock, data: {} });
        throw new Error("rolled back");
      }),
    ).rejects.toThrow("rolled back");
    expect(await outboxOf(t.s, { orgId: org.id })).toEqual([]);

    const put = await t.request("PUT", `/beta/v1/org/${org.id}/notification-preferences`, { key: org.members.member!.key, body: { email_event_types: ["support.ticket_created"] } });
    expect(put.status).toBe(200);
    const filed = await t.request("POST", `/beta/v1/org/${org.id}/support/bug-reports`, { key: org.members.member!.key, body: { ...validBug(), summary: "Export <fails> & spins" } });
    expect(filed.status).toBe(200);
    expect((await filed.json()).status).toBe("created");
    const rows = await outboxOf(t.s, { orgId: org.id });
    expect(rows.map((r) => r.to_address)).toEqual([org.members.member!.email]);
    await deliverAll(t.s);
    expect(smtp.mails).toHaveLength(1);
    expect(smtp.mails[0]!.subject).toContain("Export <fails> & spins");
    expect(smtp.mails[0]!.html).toContain("Export &lt;fails&gt; &amp; spins");
  });

  test("the email: headline figure in the subject, text and HTML parts, data HTML-escaped, the console link, the preferences, a stable Message-ID", async () => {
    const org = await orgWithMembers(t.s, `Acme <b>bold</b> & co ${++seq}`, { admin: "admin" });
    const data = purchaseData({ message: `<script>alert("x")</script> & <img src=x onerror=alert(1)>` });
    const e = await emit(t.s, org.id, "purchase.pending_approval", data, { consolePath: `/app/purchases/${data.purchase_id}`, resourcePath: `/beta/v1/org/${org.id}/purchases/${data.purchase_id}` });
    const report = await deliverEmails(t.s);
    expect(report).toEqual({ sent: 1, retried: 0, failed: 0 });
    expect(smtp.mails).toHaveLength(1);
    const mail = smtp.mails[0]!;
    expect(mail.to).toEqual([org.members.admin!.email]);
    expect(mail.from).toBe("commitops@localhost");
    expect(mail.subject).toBe("Purchase waiting for approval: AWS: $12,345.00 upfront, $1,234.50/month net savings, 3 items");
    const consoleUrl = `http://localhost/app/purchases/${data.purchase_id}`;
    const prefsApi = `http://localhost/beta/v1/org/${org.id}/notification-preferences`;
    const prefsPage = "http://localhost/app/notifications";

    // Text part: the data as written, the link, where to change preferences.
    expect(mail.text).toContain(`<script>alert("x")</script>`);
    expect(mail.text).toContain(`Review and approve: ${consoleUrl}`);
    expect(mail.text).toContain("Upfront: $12,345.00");
    expect(mail.text).toContain(`notification preferences: ${prefsPage} (API: GET or PUT ${prefsApi})`);
    expect(mail.text).toContain("Acme <b>bold</b> & co");

    // HTML part: every value escaped, no markup from the data.
    expect(mail.html).not.toContain("<script");
    expect(mail.html).not.toContain("<img");
    expect(mail.html).not.toContain("<b>bold");
    expect(mail.html).toContain("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &lt;img src=x onerror=alert(1)&gt;");
    expect(mail.html).toContain("Acme &lt;b&gt;bold&lt;/b&gt; &amp; co");
    expect(mail.html).toContain(`<a href="${consoleUrl}"`);
    expect(mail.html).toContain(">Review and approve</a>");
    expect(mail.html).toContain(`<a href="${prefsPage}"`);
    expect(mail.html).toContain(prefsApi);

    // Recognisable on a resend: the Message-ID names the event and the recipient.
    expect(mail.messageId).toBe(`<${e.id}.${org.members.admin!.userId}@localhost>`);
    expect(mail.headers.get("x-commitops-event-id")).toBe(e.id);
    expect(mail.headers.get("x-commitops-event-type")).toBe("purchase.pending_approval");
    expect(mail.headers.get("auto-submitted")).toBe("auto-generated");
  });

  test("a 4xx answer is retried with backoff until accepted: delivered once", async () => {
    const org = await orgWithMembers(t.s, `4xx ${++seq}`, { admin: "admin" });
    const lines: string[] = [];
    const s = services({}, createLogger("debug", (l) => lines.push(l)));
    const e = await emit(s, org.id, "billing_sync.failed", { connection: { name: "AWS CUR" }, error: { cause: "permission", message: "Access denied" } });
    smtp.behaviour.rcptCode = 451;
    expect(await deliverEmails(s)).toEqual({ sent: 0, retried: 1, failed: 0 });
    let [row] = await outboxOf(s, { eventId: e.id });
    expect(row.status).toBe("pending");
    expect(row.attempts).toBe(1);
    expect(row.last_error).toContain("451");
    expect(row.last_error).not.toContain(org.members.admin!.email);
    const wait = new Date(row.next_attempt_at).getTime() - clock.getTime();
    expect(wait).toBeGreaterThanOrEqual(5_000);
    expect(wait).toBeLessThanOrEqual(emailBackoffCeilingMs(1));
    // Not due yet: nothing is tried.
    expect(await deliverEmails(s)).toEqual({ sent: 0, retried: 0, failed: 0 });
    expect(smtp.rcptAttempts).toBe(1);

    later(wait);
    expect(await deliverEmails(s)).toEqual({ sent: 0, retried: 1, failed: 0 });
    smtp.behaviour.rcptCode = null;
    later(emailBackoffCeilingMs(2));
    expect(await deliverEmails(s)).toEqual({ sent: 1, retried: 0, failed: 0 });
    later(HOUR);
    expect(await deliverAll(s)).toEqual({ sent: 0, retried: 0, failed: 0 });
    expect(smtp.mails).toHaveLength(1);
    [row] = await outboxOf(s, { eventId: e.id });
    expect(row.status).toBe("sent");
    expect(row.attempts).toBe(3);
    expect(row.last_error).toBeNull();
    // The log tells of the failures without the address.
    expect(lines.some((l) => l.includes("email delivery failed") && l.includes("451"))).toBe(true);
    expect(lines.join("\n")).not.toContain(org.members.admin!.email);
  });

  test("a mail server that is down, then refuses connections (421), then is back: each email delivered once", async () => {
    const org = await orgWithMembers(t.s, `down ${++seq}`, { a1: "admin", a2: "admin" });
    const e = await emit(t.s, org.id, "budget.threshold_crossed", { budget_name: "Prod", amount: 10000, currency: "USD", percent_used: 85.2, threshold_percent: 80, basis: "actual" });
    await smtp.stop();
    try {
      expect(await deliverEmails(t.s)).toEqual({ sent: 0, retried: 2, failed: 0 });
      for (const row of await outboxOf(t.s, { eventId: e.id })) expect(row.last_error).toMatch(/ECONNREFUSED|connect/i);
    } finally {
      await smtp.start();
    }
    smtp.behaviour.refuseConnections = true;
    later(HOUR);
    expect(await deliverEmails(t.s)).toEqual({ sent: 0, retried: 2, failed: 0 });
    for (const row of await outboxOf(t.s, { eventId: e.id })) expect(row.last_error).toContain("421");
    smtp.behaviour.refuseConnections = false;
    later(HOUR);
    expect(await deliverAll(t.s)).toEqual({ sent: 2, retried: 0, failed: 0 });
    expect(smtp.mails.map((m) => m.to[0]).sort()).toEqual([org.members.a1!.email, org.members.a2!.email].sort());
    expect(smtp.mails[0]!.subject).toBe("Budget threshold crossed: Prod: spent 85.2% of $10,000.00");
  });

  test("retried for 3 days, then given up (failed)", async () => {
    const org = await orgWithMembers(t.s, `3 days ${++seq}`, { admin: "admin" });
    const e = await emit(t.s, org.id, "billing_sync.failed");
    const [queued] = await outboxOf(t.s, { eventId: e.id });
    const createdAt = new Date(queued.created_at).getTime();
    smtp.behaviour.rcptCode = 451;
    let attempts = 0;
    // The longest waits the jitter allows: the fewest attempts in 3 days.
    for (let i = 0; i < 300; i++) {
      const r = await deliverEmails(t.s, { random: () => 0.999 });
      attempts += r.retried + r.failed;
      const [row] = await outboxOf(t.s, { eventId: e.id });
      if (row.status !== "pending") break;
      clock = new Date(new Date(row.next_attempt_at).getTime());
    }
    const [row] = await outboxOf(t.s, { eventId: e.id });
    expect(row.status).toBe("failed");
    expect(row.last_error).toMatch(/^gave up after 3 days: .*451/);
    expect(row.attempts).toBe(attempts);
    // Hourly at most once the backoff is capped: about 3 days' worth of attempts, none after.
    expect(attempts).toBeGreaterThan(60);
    expect(clock.getTime() - createdAt).toBeLessThanOrEqual(EMAIL_RETRY_WINDOW_MS);
    expect(clock.getTime() - createdAt).toBeGreaterThan(EMAIL_RETRY_WINDOW_MS - 2 * HOUR);
    later(HOUR);
    expect(await deliverEmails(t.s)).toEqual({ sent: 0, retried: 0, failed: 0 });
    expect(smtp.mails).toHaveLength(0);
  });

  test("a 5xx refusal of the recipient is final at once", async () => {
    const org = await orgWithMembers(t.s, `550 ${++seq}`, { admin: "admin" });
    const e = await emit(t.s, org.id, "billing_sync.failed");
    smtp.behaviour.rcptCode = 550;
    expect(await deliverEmails(t.s)).toEqual({ sent: 0, retried: 0, failed: 1 });
    const [row] = await outboxOf(t.s, { eventId: e.id });
    expect(row.status).toBe("failed");
    expect(row.attempts).toBe(1);
    expect(row.last_error).toMatch(/^refused: .*550/);
  });

  test("a sender that dies between the server's acceptance and the record: resent after the lease with the same Message-ID, recorded once", async () => {
    const org = await orgWithMembers(t.s, `crash ${++seq}`, { admin: "admin" });
    const e = await emit(t.s, org.id, "billing_sync.failed");
    const crashed = await deliverEmails(t.s, {
      hooks: {
        afterSend() {
          throw new Error("SIGKILL");
        },
      },
    });
    expect(crashed).toEqual({ sent: 0, retried: 0, failed: 0 });
    expect(smtp.mails).toHaveLength(1);
    // The lease still holds it: another sender leaves it alone.
    expect(await deliverEmails(t.s)).toEqual({ sent: 0, retried: 0, failed: 0 });
    later(EMAIL_LEASE_MS + 1);
    expect(await deliverEmails(t.s)).toEqual({ sent: 1, retried: 0, failed: 0 });
    expect(smtp.mails).toHaveLength(2);
    expect(smtp.mails[0]!.messageId).toBe(smtp.mails[1]!.messageId);
    expect(smtp.mails[1]!.headers.get("x-commitops-event-id")).toBe(e.id);
    const [row] = await outboxOf(t.s, { eventId: e.id });
    expect(row.status).toBe("sent");
    expect(row.attempts).toBe(2);
  });

  test("senders running at once (replicas) send each email once", async () => {
    const org = await orgWithMembers(t.s, `replicas ${++seq}`, { a1: "admin", a2: "admin", a3: "admin" });
    for (let i = 0; i < 8; i++) await emit(t.s, org.id, "billing_sync.failed", { connection: { name: `conn ${i}` } });
    const replicas: Services[] = [t.s];
    if (driver === "postgres") {
      for (let i = 0; i < 2; i++) {
        const h = await openDb({ url: t.db.url, migrate: false });
        extraHandles.push(h);
        replicas.push(createServices(h, t.s.config, createLogger("silent"), { now: () => clock }));
      }
    } else replicas.push(t.s, t.s);
    const reports = await Promise.all(replicas.map((s) => deliverEmails(s, { batchSize: 3 })));
    const rest = await deliverAll(t.s);
    expect(reports.reduce((n, r) => n + r.sent, 0) + rest.sent).toBe(24);
    expect(smtp.mails).toHaveLength(24);
    expect(new Set(smtp.mails.map((m) => m.messageId)).size).toBe(24);
  });

  test("a sender whose replica is stopping sends what it started and gives the rest of its batch back: another replica sends them at once, each once", async () => {
    const org = await orgWithMembers(t.s, `stopping ${++seq}`, { a1: "admin", a2: "admin", a3: "admin", a4: "admin", a5: "admin", a6: "admin" });
    const e = await emit(t.s, org.id, "billing_sync.failed");
    const stopping = services({});
    // The first send accepted by the server stops the replica: the sends already under way end, no other starts.
    await deliverEmails(stopping, {
      hooks: {
        afterSend() {
          stopping.shutdown.requestStop();
        },
      },
    });
    const sentFirst = smtp.mails.length;
    expect(sentFirst).toBeGreaterThan(0);
    expect(sentFirst).toBeLessThan(6);
    const rows = await outboxOf(t.s, { eventId: e.id });
    const givenBack = rows.filter((r: any) => r.status === "pending");
    expect(givenBack).toHaveLength(6 - sentFirst);
    for (const r of givenBack) expect([r.lease_token, r.lease_until, r.attempts]).toEqual([null, null, 0]);
    // No lease to wait out: the clock has not moved and the other replica sends the rest now.
    expect(await deliverEmails(t.s)).toEqual({ sent: 6 - sentFirst, retried: 0, failed: 0 });
    expect(smtp.mails).toHaveLength(6);
    expect(new Set(smtp.mails.map((m) => m.messageId)).size).toBe(6);
  });

  test("without SMTP_URL nothing is sent, rows wait; sent once a server is configured within 3 days, given up after", async () => {
    const org = await orgWithMembers(t.s, `no smtp ${++seq}`, { admin: "admin" });
    const noSmtp = services({ smtpUrl: undefined });
    const first = await emit(noSmtp, org.id, "billing_sync.failed");
    expect(await deliverEmails(noSmtp)).toEqual({ sent: 0, retried: 0, failed: 0 });
    expect((await outboxOf(t.s, { eventId: first.id }))[0].status).toBe("pending");
    expect(await deliverEmails(t.s)).toEqual({ sent: 1, retried: 0, failed: 0 });

    const second = await emit(noSmtp, org.id, "billing_sync.failed");
    later(EMAIL_RETRY_WINDOW_MS + 60_000);
    expect(await deliverEmails(noSmtp)).toEqual({ sent: 0, retried: 0, failed: 1 });
    const [row] = await outboxOf(t.s, { eventId: second.id });
    expect(row.status).toBe("failed");
    expect(row.last_error).toContain("SMTP_URL was not set");
    expect(await deliverEmails(t.s)).toEqual({ sent: 0, retried: 0, failed: 0 });
    expect(smtp.mails).toHaveLength(1);
  });

  test("a member removed after the event is not emailed", async () => {
    const org = await orgWithMembers(t.s, `removed ${++seq}`, { a1: "admin", a2: "admin" });
    const e = await emit(t.s, org.id, "billing_sync.failed");
    const r = await t.request("DELETE", `/beta/v1/org/${org.id}/members/${org.members.a2!.userId}`, { key: org.members.a1!.key });
    expect(r.status).toBe(204);
    expect(await deliverAll(t.s)).toEqual({ sent: 1, retried: 0, failed: 1 });
    expect(smtp.mails.map((m) => m.to[0])).toEqual([org.members.a1!.email]);
    const rows = await outboxOf(t.s, { eventId: e.id });
    expect(rows.find((x) => x.user_id === org.members.a2!.userId).last_error).toContain("no longer a member");
  });

  test("SMTP credentials from SMTP_URL authenticate and never reach the log, nor do addresses", async () => {
    const authed = await startSmtpServer({ username: "mailer", password: "pa55-w0rd-secret" });
    try {
      const org = await orgWithMembers(t.s, `auth ${++seq}`, { admin: "admin" });
      const lines: string[] = [];
      const log = createLogger("debug", (l) => lines.push(l));
      const wrong = services({ smtpUrl: authed.url.replace("pa55-w0rd-secret", "wrong-secret-pw") }, log);
      const e = await emit(wrong, org.id, "billing_sync.failed");
      expect(await deliverEmails(wrong)).toEqual({ sent: 0, retried: 1, failed: 0 });
      later(HOUR);
      authed.behaviour.rcptCode = 451;
      const right = services({ smtpUrl: authed.url }, log);
      expect(await deliverEmails(right)).toEqual({ sent: 0, retried: 1, failed: 0 });
      authed.behaviour.rcptCode = null;
      later(HOUR);
      expect(await deliverEmails(right)).toEqual({ sent: 1, retried: 0, failed: 0 });
      expect(authed.mails).toHaveLength(1);
      const logged = lines.join("\n");
      expect(lines.length).toBeGreaterThanOrEqual(2);
      expect(logged).toContain("535");
      for (const secret of ["pa55-w0rd-secret", "wrong-secret-pw", org.members.admin!.email]) expect(logged).not.toContain(secret);
      const [row] = await outboxOf(t.s, { eventId: e.id });
      expect(row.status).toBe("sent");
    } finally {
      await authed.stop();
    }
  });
});
