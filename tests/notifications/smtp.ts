/**
 * A real SMTP server on loopback (the `smtp-server` package) that keeps what it receives and can
 * be told to answer 4xx/5xx, to refuse connections (421), or be stopped and started again on
 * the same port. Plus a small MIME reader for the messages nodemailer writes.
 */
import { SMTPServer } from "smtp-server";

export interface ReceivedMail {
  from: string;
  to: string[];
  raw: string;
  headers: Map<string, string>;
  subject: string;
  messageId: string;
  text: string;
  html: string;
}

export interface SmtpBehaviour {
  /** Answer RCPT TO with this code (e.g. 451 try later, 550 no such user). */
  rcptCode: number | null;
  /** Refuse each connection with 421 at the greeting. */
  refuseConnections: boolean;
}

export interface TestSmtpServer {
  port: number;
  /** smtp://… of the server (with the credentials it accepts, when it asks for some). */
  url: string;
  mails: ReceivedMail[];
  behaviour: SmtpBehaviour;
  /** RCPT TO commands seen, accepted or not. */
  rcptAttempts: number;
  reset(): void;
  stop(): Promise<void>;
  start(): Promise<void>;
}

const CRLF = /\r?\n/;

function decodeWords(s: string): string {
  return s.replace(/=\?([^?]+)\?([QqBb])\?([^?]*)\?=\s*/g, (_m, _charset, enc: string, text: string) => {
    if (enc.toUpperCase() === "B") return Buffer.from(text, "base64").toString("utf8");
    const bytes = text.replace(/_/g, " ").replace(/=([0-9A-Fa-f]{2})/g, (_x, h: string) => String.fromCharCode(parseInt(h, 16)));
    return Buffer.from(bytes, "latin1").toString("utf8");
  });
}

function parseHeaders(block: string): Map<string, string> {
  const headers = new Map<string, string>();
  const unfolded = block.replace(/\r?\n[ \t]+/g, " ");
  for (const line of unfolded.split(CRLF)) {
    const i = line.indexOf(":");
    if (i > 0) headers.set(line.slice(0, i).trim().toLowerCase(), line.slice(i + 1).trim());
  }
  return headers;
}

function splitHead(raw: string): [string, string] {
  const m = /\r?\n\r?\n/.exec(raw);
  return m ? [raw.slice(0, m.index), raw.slice(m.index + m[0].length)] : [raw, ""];
}

function decodeBody(body: string, encoding: string | undefined): string {
  const enc = (encoding ?? "7bit").toLowerCase();
  if (enc === "base64") return Buffer.from(body.replace(/\s+/g, ""), "base64").toString("utf8");
  if (enc === "quoted-printable") {
    const bytes = body.replace(/=\r?\n/g, "").replace(/=([0-9A-Fa-f]{2})/g, (_x, h: string) => String.fromCharCode(parseInt(h, 16)));
    return Buffer.from(bytes, "latin1").toString("utf8");
  }
  return body;
}

/** The text/plain and text/html parts of a (possibly multipart) message. */
export function parseMail(raw: string, envelope: { from: string; to: string[] }): ReceivedMail {
  const [head, body] = splitHead(raw);
  const headers = parseHeaders(head);
  const parts: { type: string; content: string }[] = [];
  const walk = (h: Map<string, string>, b: string) => {
    const type = h.get("content-type") ?? "text/plain";
    const boundary = /boundary="?([^";]+)"?/i.exec(type)?.[1];
    if (/^multipart\//i.test(type) && boundary) {
      for (const chunk of b.split(`--${boundary}`).slice(1)) {
        if (chunk.startsWith("--")) break;
        const [ph, pb] = splitHead(chunk.replace(/^\r?\n/, ""));
        walk(parseHeaders(ph), pb);
      }
    } else parts.push({ type: type.split(";")[0]!.trim().toLowerCase(), content: decodeBody(b, h.get("content-transfer-encoding")) });
  };
  walk(headers, body);
  return {
    ...envelope,
    raw,
    headers,
    subject: decodeWords(headers.get("subject") ?? ""),
    messageId: headers.get("message-id") ?? "",
    text: parts.find((p) => p.type === "text/plain")?.content ?? "",
    html: parts.find((p) => p.type === "text/html")?.content ?? "",
  };
}

export async function startSmtpServer(opts: { username?: string; password?: string } = {}): Promise<TestSmtpServer> {
  const state: TestSmtpServer = {
    port: 0,
    url: "",
    mails: [],
    behaviour: { rcptCode: null, refuseConnections: false },
    rcptAttempts: 0,
    reset() {
      state.mails.length = 0;
      state.behaviour.rcptCode = null;
      state.behaviour.refuseConnections = false;
      state.rcptAttempts = 0;
    },
    stop: async () => {},
    start: async () => {},
  };
  const fail = (code: number, message: string) => Object.assign(new Error(message), { responseCode: code });
  let server: SMTPServer | null = null;
  const make = () =>
    new SMTPServer({
      secure: false,
      disabledCommands: opts.username ? ["STARTTLS"] : ["STARTTLS", "AUTH"],
      authOptional: !opts.username,
      allowInsecureAuth: true,
      logger: false,
      onAuth(auth, _session, cb) {
        if (auth.username === opts.username && auth.password === opts.password) cb(null, { user: auth.username });
        else cb(fail(535, "5.7.8 Authentication credentials invalid"));
      },
      onConnect(_session, cb) {
        if (state.behaviour.refuseConnections) cb(fail(421, "4.3.2 Service not available, closing channel"));
        else cb();
      },
      onRcptTo(address, _session, cb) {
        state.rcptAttempts++;
        const code = state.behaviour.rcptCode;
        if (code) cb(fail(code, code >= 500 ? `5.1.1 <${address.address}>: Recipient address rejected` : `4.3.0 <${address.address}>: try again later`));
        else cb();
      },
      onData(stream, session, cb) {
        const chunks: Buffer[] = [];
        stream.on("data", (c: Buffer) => chunks.push(c));
        stream.on("end", () => {
          const raw = Buffer.concat(chunks).toString("utf8");
          const env = session.envelope;
          state.mails.push(parseMail(raw, { from: env.mailFrom ? env.mailFrom.address : "", to: env.rcptTo.map((r) => r.address) }));
          cb();
        });
      },
    });
  state.start = () =>
    new Promise<void>((resolve, reject) => {
      server = make();
      server.on("error", () => {});
      server.listen(state.port, "127.0.0.1", () => {
        const addr = (server as unknown as { server: { address(): { port: number } } }).server.address();
        state.port = addr.port;
        const auth = opts.username ? `${encodeURIComponent(opts.username)}:${encodeURIComponent(opts.password ?? "")}@` : "";
        state.url = `smtp://${auth}127.0.0.1:${state.port}`;
        resolve();
      });
      (server as unknown as { server: { once(e: string, f: (e: Error) => void): void } }).server.once("error", reject);
    });
  state.stop = () => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  await state.start();
  return state;
}
