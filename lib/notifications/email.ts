import type { DbOrTx } from "../db/index.ts";
import type { EmittedEvent } from "../events/emit.ts";

/**
 * Queues the emails of one event, in the event's transaction: to each member of the org who
 * chose this event type (and, for the types that always reach admins, to every admin).
 */
export async function queueEventEmails(_tx: DbOrTx, _event: EmittedEvent): Promise<void> {
  // Filled in by the email channel (issue 28).
}
