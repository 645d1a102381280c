export * from "./tickets.ts";
export * from "./outbox.ts";
