/**
 * The TCP peer address of a request, recorded by the server entry (which alone sees the socket):
 * `fetch: (req, server) => { rememberPeerAddress(req, () => server.requestIP(req)?.address); return app.handle(req); }`.
 * Login throttling counts failures per (email, address); without it every client shares "unknown".
 * The entry may hand over a function, asked only when a route wants the address: Bun's
 * `requestIP` costs a few µs, on every request, for the few (sign-in) that read it.
 */
type Address = string | null | undefined;
const peers = new WeakMap<Request, string | (() => Address)>();

export function rememberPeerAddress(request: Request, address: Address | (() => Address)): void {
  if (address) peers.set(request, address);
}

export function peerAddress(request: Request): string | undefined {
  const a = peers.get(request);
  if (typeof a !== "function") return a;
  const address = a() || undefined;
  if (address) peers.set(request, address);
  else peers.delete(request);
  return address;
}
