import { defineRoutes, orgRoutes } from "../../../../../../lib/http/orgRoutes.ts";
import { getNotificationPreferences, setNotificationPreferences } from "../../../../../../lib/notifications/preferences.ts";
import { NotificationPreferences, PutNotificationPreferencesBody } from "./model.ts";

const tags = ["Notifications"];

const WHOSE =
  "The calling person's own choice in this organization (each member has theirs; an admin cannot set another's). Needs a credential of a person: an OAuth token, or an API key created by a member (403 `user_required` for a key made by the command line). `events:read`, which every role has, is enough.";

/** The caller's email notification choices (lib/notifications/preferences.ts). */
export default defineRoutes((s, prefix) =>
  orgRoutes(s, prefix)
    .get("", ({ principal }) => getNotificationPreferences(s.db, principal.orgId, principal.userId, !!s.config.smtpUrl), {
      scope: "events:read",
      response: { 200: NotificationPreferences },
      detail: { tags, summary: "Which events email you in this organization", description: WHOSE },
    })
    .put("", ({ principal, body }) => setNotificationPreferences(s.db, principal.orgId, principal.userId, body.email_event_types, s.now(), !!s.config.smtpUrl), {
      scope: "events:read",
      body: PutNotificationPreferencesBody,
      response: { 200: NotificationPreferences },
      detail: {
        tags,
        summary: "Choose which events email you in this organization",
        description: `${WHOSE} Replaces the whole list: an unknown type, a repeated one or an unknown field is 422 \`validation_error\`. Emails go to your account's address, one per event, from the next event on.`,
      },
    }),
);
