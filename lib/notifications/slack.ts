/**
 * The Slack message of an event (Block Kit, posted to an incoming webhook by the webhook
 * delivery worker): a header, the headline figure, the details as fields, a button to the
 * console page (a pending approval's button opens its approval page) and the event's id.
 * Everything from the data is escaped for mrkdwn (&, <, >), so an event can never mention
 * @channel, forge a link or break the message; texts are cut to Block Kit's limits.
 */
import type { EventView } from "../events/view.ts";
import { oneLine, summarizeEvent } from "./summary.ts";

/** Slack's escaping of mrkdwn text: only these three are control characters. */
export function escapeMrkdwn(s: string): string {
  return s.replace(/[&<>]/g, (c) => (c === "&" ? "&amp;" : c === "<" ? "&lt;" : "&gt;"));
}

/** Escaped text of at most `max` characters, never ending inside an entity it cut. */
function mrkdwn(s: string, max: number): string {
  const escaped = escapeMrkdwn(s);
  if (escaped.length <= max) return escaped;
  return `${escaped.slice(0, max - 1).replace(/&[a-z]*$/, "")}…`;
}

// Block Kit limits: header 150, section text 3000, a field 2000 (at most 10), button text 75, url 3000.
const HEADER_MAX = 150;
const SECTION_MAX = 3000;
const FIELD_MAX = 2000;
const MAX_FIELDS = 10;
const BUTTON_MAX = 75;
const URL_MAX = 3000;

export function slackMessage(view: EventView, publicUrl: string): { text: string; blocks: unknown[] } {
  const summary = summarizeEvent(view);
  const consoleUrl = view.links.console && view.links.console.length <= URL_MAX ? view.links.console : `${publicUrl.replace(/\/+$/, "")}/app/`;
  const blocks: unknown[] = [
    { type: "header", text: { type: "plain_text", text: oneLine(summary.title, HEADER_MAX), emoji: false } },
    {
      type: "section",
      text: { type: "mrkdwn", text: mrkdwn(`${oneLine(summary.headline, 500)}${summary.detail ? `\n${summary.detail}` : ""}`, SECTION_MAX) },
    },
  ];
  const fields = summary.fields.slice(0, MAX_FIELDS).map((f) => ({ type: "mrkdwn", text: `*${mrkdwn(f.label, 100)}*\n${mrkdwn(f.value, FIELD_MAX - 110)}` }));
  if (fields.length) blocks.push({ type: "section", fields });
  blocks.push({
    type: "actions",
    elements: [
      {
        type: "button",
        action_id: "open_console",
        text: { type: "plain_text", text: oneLine(summary.action, BUTTON_MAX), emoji: false },
        url: consoleUrl,
        ...(summary.urgent ? { style: "primary" } : {}),
      },
    ],
  });
  blocks.push({ type: "context", elements: [{ type: "mrkdwn", text: mrkdwn(`${view.type} · ${view.timestamp} · event ${view.id}`, SECTION_MAX) }] });
  // The fallback (notifications, clients without blocks) is mrkdwn too.
  return { text: mrkdwn(oneLine(`${summary.title}: ${summary.headline}`, 300), 1000), blocks };
}
