/** What each scope lets an application do, as shown on the consent page. */
export const SCOPE_DESCRIPTIONS: Record<string, string> = {
  "reports:read": "read allocation reports",
  "templates:read": "read commitment plan templates",
  "templates:write": "create, change and delete commitment plan templates (and the purchases they schedule)",
  "estimates:read": "read cost estimates",
  "estimates:write": "create, change and delete cost estimates",
  "support:write": "file support tickets",
  "assistant:read": "let the assistant read commitments, coverage, utilization, spend and recommendations",
  "connections:read": "see the billing and purchasing connections to your cloud providers and their syncs (never their credentials)",
  "connections:write": "add, change, test, sync and delete billing and purchasing connections to your cloud providers",
  "purchases:read": "see the commitment purchases and their story (what was bought, approved, rejected or failed)",
  "purchases:write": "approve or reject commitment purchases: approving spends money at your cloud providers",
};
