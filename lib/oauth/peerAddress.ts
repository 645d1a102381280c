/**
 * The TCP peer address of a request, recorded by the server entry (which alone sees the socket):
 * `fetch: (req, server) => { rememberPeerAddress(req, server.requestIP(req)?.address); return app.handle(req); }`.
 * Login throttling counts failures per (email, address); without it every client shares "unknown".
 */
const peers = new WeakMap<Request, string>();

export function rememberPeerAddress(request: Request, address: string | null | undefined): void {
  if (address) peers.set(request, address);
}

export function peerAddress(request: Request): string | undefined {
  return peers.get(request);
}
