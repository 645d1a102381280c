/**
 * The mail server (nodemailer over SMTP): SMTP_URL (`smtp://user:pass@host:587` upgrades with
 * STARTTLS when the server offers it; `smtps://…:465` is TLS from the start; nodemailer's query
 * options such as `?requireTLS=true` apply), sender SMTP_FROM. Without SMTP_URL there is no
 * mailer and no email is sent. The URL carries the credentials: it is never logged (only its
 * host and port) and an error's text is stripped of it and of addresses before anyone sees it.
 */
import nodemailer from "nodemailer";
import type { Config } from "../config.ts";

export interface OutgoingEmail {
  to: string;
  subject: string;
  text: string;
  html: string;
  /** `<…@…>`: the same for every attempt of one email, so a resend after a crash is recognisable. */
  messageId: string;
  headers: Record<string, string>;
}

export interface Mailer {
  /** Host and port of the server, for logs. */
  readonly target: string;
  /** Sends one email or throws a `MailError` (after `timeoutMs` at most). */
  send(email: OutgoingEmail, timeoutMs: number): Promise<void>;
  close(): void;
}

/** Why a send failed, fit for the log and the outbox row. */
export class MailError extends Error {
  constructor(
    message: string,
    /** The server's SMTP reply code, if it answered. */
    readonly responseCode: number | null,
    /** The server refused the recipient for good (5xx to RCPT TO): retrying cannot help. */
    readonly permanent: boolean,
  ) {
    super(message);
    this.name = "MailError";
  }
}

/** host:port of an SMTP URL, never its credentials. */
export function smtpTarget(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port || (u.protocol === "smtps:" ? "465" : "587")}`;
  } catch {
    return "(invalid SMTP_URL)";
  }
}

const ADDRESS = /[^\s<>"'(),;:]+@[^\s<>"'(),;:]+/g;

/** An error's text without addresses or the URL's credentials, at most 300 characters. */
export function mailErrorText(e: unknown, url: string): string {
  const err = e as { message?: unknown; response?: unknown; code?: unknown };
  let text = typeof err?.response === "string" && err.response ? err.response : typeof err?.message === "string" ? err.message : String(e);
  try {
    const u = new URL(url);
    for (const secret of [u.password, decodeURIComponent(u.password), u.username, decodeURIComponent(u.username)]) if (secret.length >= 3) text = text.split(secret).join("[redacted]");
  } catch {
    // An unparsable URL: nothing of it to strip.
  }
  text = text.replace(ADDRESS, "[address]").replace(/\s+/g, " ").trim();
  const code = typeof err?.code === "string" && !text.includes(err.code) ? `${err.code}: ` : "";
  return `${code}${text}`.slice(0, 300);
}

export function createMailer(config: Pick<Config, "smtpUrl" | "smtpFrom">): Mailer | null {
  const url = config.smtpUrl;
  if (!url) return null;
  let transport: ReturnType<typeof nodemailer.createTransport>;
  try {
    // Deliberate timeouts: a mail server that hangs must not hold the sender's lease.
    transport = nodemailer.createTransport({ url, connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 20_000, dnsTimeout: 5_000 });
  } catch (e) {
    throw new MailError(`SMTP_URL cannot be used: ${mailErrorText(e, url)}`, null, false);
  }
  return {
    target: smtpTarget(url),
    async send(email, timeoutMs) {
      try {
        await transport.sendMail({
          from: config.smtpFrom,
          to: email.to,
          subject: email.subject,
          text: email.text,
          html: email.html,
          messageId: email.messageId,
          headers: email.headers,
          signal: AbortSignal.timeout(timeoutMs),
        } as Parameters<typeof transport.sendMail>[0]);
      } catch (e) {
        const err = e as { responseCode?: unknown; command?: unknown; name?: unknown };
        const responseCode = typeof err?.responseCode === "number" ? err.responseCode : null;
        const refusedRecipient = err?.command === "RCPT TO" && responseCode !== null && responseCode >= 500;
        const text = err?.name === "TimeoutError" || err?.name === "AbortError" ? `no answer from the mail server within ${timeoutMs} ms` : mailErrorText(e, url);
        throw new MailError(text, responseCode, refusedRecipient);
      }
    },
    close() {
      transport.close();
    },
  };
}
