import { t } from "elysia";
import { NullableText, NullableTextEnum, Text, TextEnum } from "../../../../../../lib/http/text.ts";
import { component } from "../../../../../../lib/http/openapiComponents.ts";
import { PageQueryFields } from "../../../../../../lib/http/paging.ts";

const summary = Text({ minLength: 1, maxLength: 200, description: "One-line summary (1..200 characters)" });
const userVerbatim = Text({ minLength: 1, maxLength: 2000, description: "The user's own words (1..2000 characters)" });
const long = (description: string) => Text({ minLength: 1, maxLength: 4000, description: `${description} (1..4000 characters)` });

export const BugReportBody = t.Object(
  {
    summary,
    user_verbatim: userVerbatim,
    what_happened: long("What happened"),
    steps_to_reproduce: long("Steps to reproduce"),
    expected_behavior: long("What was expected instead"),
    app_url: t.Optional(NullableText({ maxLength: 500, default: null, description: "Page of the app the report is about (max 500 characters)" })),
    provider: t.Optional(NullableTextEnum(["aws", "azure", "gcp"], { default: null, description: "Cloud provider concerned" })),
  },
  { additionalProperties: false },
);

export const FeatureRequestBody = t.Object(
  {
    summary,
    user_verbatim: userVerbatim,
    problem: long("The problem the capability would solve"),
    desired_behavior: long("What the platform should do"),
    business_value: long("Why it matters to the business"),
  },
  { additionalProperties: false },
);

export const SupportTicketResult = component(
  "SupportResult",
  t.Object(
    {
      status: TextEnum(["created", "rate_limited", "not_filed"], {
        description: "`created`: filed; `rate_limited`: the organization reached its daily cap; `not_filed`: filing is disabled here",
      }),
      ticket_key: t.Optional(t.String({ description: "`SUP-<n>`, when created" })),
      ticket_url: t.Optional(t.String({ description: "Where the ticket can be read back, when created" })),
      reason: t.Optional(t.String({ description: "Why nothing was filed" })),
    },
    { additionalProperties: false },
  ),
);

const nullableString = t.Union([t.String(), t.Null()]);

export const SupportTicket = t.Object({
  ticket_key: t.String(),
  kind: TextEnum(["bug", "feature"]),
  org_id: t.String({ format: "uuid" }),
  summary: t.String(),
  user_verbatim: t.String(),
  what_happened: t.Optional(nullableString),
  steps_to_reproduce: t.Optional(nullableString),
  expected_behavior: t.Optional(nullableString),
  app_url: t.Optional(nullableString),
  provider: t.Optional(NullableTextEnum(["aws", "azure", "gcp"])),
  problem: t.Optional(nullableString),
  desired_behavior: t.Optional(nullableString),
  business_value: t.Optional(nullableString),
  filed_by: t.Object({
    user_id: t.Union([t.String({ format: "uuid" }), t.Null()]),
    credential_kind: TextEnum(["api_key", "oauth"]),
    credential_id: t.String(),
  }),
  created_at: t.String({ format: "date-time" }),
});

// A named OpenAPI component (DESIGN §12), shared by the list and the single read.
component("SupportTicket", SupportTicket);

export const ListTicketsQuery = t.Object({
  kind: t.Optional(TextEnum(["bug", "feature"], { description: "Only bug reports or only feature requests" })),
  ...PageQueryFields,
});
