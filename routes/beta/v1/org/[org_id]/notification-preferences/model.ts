import { t } from "elysia";
import { component } from "../../../../../../lib/http/openapiComponents.ts";
import { TextEnumSet } from "../../../../../../lib/http/text.ts";
import { EVENT_TYPES } from "../../../../../../lib/events/catalog.ts";

const EventTypeList = (description: string) => t.Array(t.String({ enum: [...EVENT_TYPES] }), { description });

export const NotificationPreferences = component(
  "NotificationPreferences",
  t.Object({
    email_event_types: EventTypeList("The event types that email you in this organization (GET /events lists them with their data)"),
    is_default: t.Boolean({
      description:
        "You never chose: these are your role's defaults (admins: purchase.pending_approval, billing_sync.failed, budget.threshold_crossed, webhook_endpoint.disabled; viewers and members: none). Defaults follow your role when it changes.",
    }),
    always_emailed: EventTypeList("Types emailed to you whatever you choose (admins: webhook_endpoint.disabled)"),
    email_enabled: t.Boolean({ description: "The service has a mail server (SMTP_URL); false: no email is sent, though your choice is kept" }),
    updated_at: t.Union([t.String({ format: "date-time" }), t.Null()], { description: "When you last chose; null for the defaults" }),
  }),
);

export const PutNotificationPreferencesBody = t.Object(
  {
    email_event_types: TextEnumSet(EVENT_TYPES, {
      description: "Every event type that should email you in this organization (replaces your choice; [] for none). Each type once.",
    }),
  },
  { additionalProperties: false },
);
