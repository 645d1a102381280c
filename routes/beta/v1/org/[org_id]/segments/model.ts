import { t } from "elysia";
import { component } from "../../../../../../lib/http/openapiComponents.ts";
import { PageQueryFields } from "../../../../../../lib/http/paging.ts";
import { TextEnum } from "../../../../../../lib/http/text.ts";
import { PROVIDERS } from "../../../../../../lib/providers.ts";

export const SegmentParams = t.Object({ org_id: t.String(), segment_id: t.String({ format: "uuid" }) });
export const ListSegmentsQuery = t.Object({
  provider: t.Optional(TextEnum(PROVIDERS, { description: "Only this provider's segments" })),
  ...PageQueryFields,
});

const list = (description: string) => t.Optional(t.Array(t.String(), { description }));

export const Segment = component(
  "Segment",
  t.Object({
    id: t.String({ format: "uuid" }),
    provider: t.String({ enum: [...PROVIDERS] }),
    kind: t.String({ enum: ["provider_resources", "custom"], description: "`provider_resources`: all of the provider's usage (one per provider, the default segment of templates); `custom`: narrowed by `filters`" }),
    name: t.String(),
    filters: t.Object(
      {
        account_ids: list("Only these (sub-)accounts"),
        regions: list("Only these regions"),
        services: list("Only these services"),
      },
      { description: "What narrows the usage (an absent list: no restriction)" },
    ),
    created_at: t.String({ format: "date-time" }),
  }),
);
