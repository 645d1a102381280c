/** The cloud providers of the service (SPEC "Common enum"). The one definition every layer uses. */
export const PROVIDERS = ["aws", "azure", "gcp"] as const;
export type Provider = (typeof PROVIDERS)[number];
export const isProvider = (p: unknown): p is Provider => typeof p === "string" && (PROVIDERS as readonly string[]).includes(p);
