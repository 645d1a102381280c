import { t } from "elysia";
import { PageQueryFields } from "../../../../../../lib/http/paging.ts";
import { SCOPES } from "../../../../../../lib/auth/scopes.ts";
import { Text, TextEnumSet } from "../../../../../../lib/http/text.ts";
import { component } from "../../../../../../lib/http/openapiComponents.ts";

export const CreateApiKeyBody = t.Object(
  {
    name: Text({ minLength: 1, maxLength: 100, description: "What the key is for" }),
    scopes: t.Optional(TextEnumSet(SCOPES, { minItems: 1, description: "Defaults to the caller's scopes" })),
  },
  { additionalProperties: false },
);

export const ApiKeyView = component(
  "ApiKey",
  t.Object({
    id: t.String({ format: "uuid" }),
    name: t.String(),
    prefix: t.String({ description: "First characters of the key, to tell keys apart" }),
    scopes: t.Array(t.String()),
    created_at: t.String({ format: "date-time" }),
    last_used_at: t.Union([t.String({ format: "date-time" }), t.Null()]),
    revoked_at: t.Union([t.String({ format: "date-time" }), t.Null()]),
  }),
);

export const CreatedApiKeyView = component(
  "CreatedApiKey",
  t.Object({
    id: t.String({ format: "uuid" }),
    name: t.String(),
    prefix: t.String(),
    scopes: t.Array(t.String()),
    api_key: t.String({ description: "The secret: shown only in this response" }),
  }),
);

export const ListQuery = t.Object({ include_revoked: t.Optional(t.Boolean({ default: false })), ...PageQueryFields }, { additionalProperties: false });
