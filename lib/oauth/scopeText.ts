/** What each scope lets an application do, as shown on the consent page. */
export const SCOPE_DESCRIPTIONS: Record<string, string> = {
  "reports:read": "read allocation reports (commitment and cloud cost allocation by account, service, resource and child organization, chargeback), in the API and through the assistant",
  "templates:read": "read commitment plan templates and the purchase recommendations generated from them",
  "templates:write": "create, change and delete commitment plan templates (and the purchases they schedule)",
  "estimates:read": "read cost estimates and price catalog SKUs under every commitment option",
  "estimates:write": "create, change and delete cost estimates",
  "support:write": "file support tickets",
  "assistant:read": "let an AI assistant (MCP) read your commitments, their coverage and utilization, spend and cost breakdowns (by account, service, region, resource or tag), period comparisons, anomalies, forecasts, linked accounts and billing data freshness; the other scopes you grant add reports, recommendations, estimates and pricing, and purchases. The assistant never changes anything",
  "connections:read": "see the billing and purchasing connections to your cloud providers and their syncs (never their credentials)",
  "connections:write": "add, change, test, sync and delete billing and purchasing connections to your cloud providers",
  "purchases:read": "see the commitment purchases and their story (what was bought, approved, rejected or failed)",
  "purchases:write": "approve or reject commitment purchases: approving spends money at your cloud providers",
  "events:read": "read the organization's event log (purchases waiting for approval, sync failures, expiring commitments, anomalies, budget alerts)",
  "webhooks:write": "add, change, rotate and delete the webhook and Slack endpoints that receive your events, and see their delivery logs",
  "budgets:read": "see budgets and their status (actual and forecast spend against each budget)",
  "budgets:write": "create, change and delete budgets and their alert thresholds",
};
