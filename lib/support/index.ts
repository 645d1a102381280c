export * from "./tickets.ts";
