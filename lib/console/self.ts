import type { Services } from "../services.ts";

type Handler = (request: Request) => Promise<Response>;
const handlers = new WeakMap<Services, Handler>();

/**
 * The app's own request handler, for the console's server side: it calls the public API and the
 * OAuth endpoints exactly as an outside client would (same routing, guard, limits), in process.
 */
export function setSelfHandler(s: Services, handler: Handler): void {
  handlers.set(s, handler);
}

export function selfHandler(s: Services): Handler {
  const h = handlers.get(s);
  if (!h) throw new Error("the console's self handler is set by createApp");
  return h;
}
