/**
 * The email of an event: a subject with its headline figure, an HTML part (every value from the
 * data, the org's name included, HTML-escaped; no script, no remote image) and a plain-text part
 * with the same content, a link to the console page, and where to change which events email you.
 */
import type { EventView } from "../events/view.ts";
import { escapeHtml } from "../oauth/pages.ts";
import { oneLine, summarizeEvent } from "./summary.ts";

export interface EmailContext {
  publicUrl: string;
  orgName: string;
  /** The recipient is emailed this type whatever they chose (an admin and a disabled endpoint). */
  always: boolean;
}

export interface RenderedEmail {
  subject: string;
  text: string;
  html: string;
}

/** Where a member changes which events email them: the console's Notifications page, and the API it calls. */
export function preferencesUrls(publicUrl: string, orgId: string): { console: string; api: string } {
  const base = publicUrl.replace(/\/+$/, "");
  return { console: `${base}/app/notifications`, api: `${base}/beta/v1/org/${orgId}/notification-preferences` };
}

/** Only http(s) links are written into a message (the console link is built from PUBLIC_URL). */
function safeLink(url: string | null): string | null {
  return url && /^https?:\/\//i.test(url) ? url : null;
}

export function renderEventEmail(view: EventView, ctx: EmailContext): RenderedEmail {
  const s = summarizeEvent(view);
  const link = safeLink(view.links.console) ?? `${ctx.publicUrl.replace(/\/+$/, "")}/app/`;
  const prefs = preferencesUrls(ctx.publicUrl, view.org_id);
  const subject = oneLine(`${s.title}: ${s.headline}`, 200);
  const why = ctx.always
    ? `Admins of ${ctx.orgName} are always emailed when this happens (${view.type}).`
    : `You receive this email because your notification preferences in ${ctx.orgName} include ${view.type}.`;
  const unsubscribe = `To choose which events email you, change your notification preferences: ${prefs.console} (API: GET or PUT ${prefs.api}).`;

  const text = [
    `${ctx.orgName} · ${s.title}`,
    "",
    s.headline,
    ...(s.detail ? ["", s.detail] : []),
    ...(s.fields.length ? ["", ...s.fields.map((f) => `${f.label}: ${f.value}`)] : []),
    "",
    `${s.action}: ${link}`,
    "",
    "-- ",
    why,
    unsubscribe,
    `Event ${view.id} (${view.type}) at ${view.timestamp}`,
    "",
  ].join("\n");

  const e = escapeHtml;
  const rows = s.fields
    .map((f) => `<tr><th align="left" style="padding:4px 12px 4px 0;color:#555;font-weight:600;vertical-align:top">${e(f.label)}</th><td style="padding:4px 0;white-space:pre-wrap">${e(f.value)}</td></tr>`)
    .join("");
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${e(subject)}</title></head>
<body style="margin:0;padding:24px;font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;color:#1a1a1a;background:#f6f7f9">
<div style="max-width:640px;margin:0 auto;background:#fff;border:1px solid #e3e5e8;border-radius:8px;padding:24px">
<p style="margin:0 0 4px;color:#666;font-size:13px">${e(ctx.orgName)}</p>
<h1 style="margin:0 0 12px;font-size:20px">${e(s.title)}</h1>
<p style="margin:0 0 12px;font-size:16px"><strong>${e(s.headline)}</strong></p>
${s.detail ? `<p style="margin:0 0 12px;white-space:pre-wrap">${e(s.detail)}</p>\n` : ""}${rows ? `<table role="presentation" style="border-collapse:collapse;margin:0 0 16px;font-size:14px">${rows}</table>\n` : ""}<p style="margin:16px 0"><a href="${e(link)}" style="display:inline-block;background:${s.urgent ? "#1f6feb" : "#24292f"};color:#fff;text-decoration:none;padding:10px 16px;border-radius:6px">${e(s.action)}</a></p>
<p style="margin:0;color:#666;font-size:12px">Or open ${e(link)}</p>
</div>
<p style="max-width:640px;margin:16px auto 0;color:#777;font-size:12px">${e(why)} To choose which events email you, change your <a href="${e(prefs.console)}" style="color:#777">notification preferences</a> (API: GET or PUT ${e(prefs.api)}).<br>Event ${e(view.id)} (${e(view.type)}) at ${e(view.timestamp)}</p>
</body></html>
`;
  return { subject, text, html };
}
