/**
 * A tiny JSON-over-HTTP server (node:http) for the keepers that receive messages: the coordinator
 * (`POST /heartbeat`) and the verdict collector (`POST /signatures`). Handlers get the parsed body and return a
 * status and a JSON body; malformed JSON is a 400, unknown routes a 404, oversized bodies a 413 (answered, then
 * the connection closed; never a reset), and a handler that throws a 500 (a bug: validation answers 4xx).
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "../sdk/run/log.ts";

export interface JsonResponse {
  status: number;
  body: unknown;
}

export type Route = (body: unknown) => JsonResponse | Promise<JsonResponse>;

export interface JsonServer {
  port: number;
  url: string;
  close(): Promise<void>;
}

export const MAX_BODY_BYTES = 64 * 1024;

export async function startJsonServer(opts: {
  host: string;
  port: number;
  routes: Record<string, Route>; // "POST /heartbeat", "GET /status"
  logger: Logger;
}): Promise<JsonServer> {
  const server: Server = createServer(async (req, res) => {
    const send = (status: number, body: unknown) => {
      const text = JSON.stringify(body, (_k, v) => (typeof v === "bigint" ? v.toString() : v));
      res.writeHead(status, { "content-type": "application/json" });
      res.end(text);
    };
    const route = opts.routes[`${req.method} ${(req.url ?? "/").split("?")[0]}`];
    if (!route) return send(404, { ok: false, reason: `no route ${req.method} ${req.url}` });
    let body: unknown = undefined;
    const text = await readBody(req);
    if (text === TOO_LARGE) {
      // Answer first, then close: the client reads a 413 with its reason instead of a reset connection.
      res.setHeader("connection", "close");
      return send(413, { ok: false, reason: `body over ${MAX_BODY_BYTES} bytes` });
    }
    if (text === undefined) return send(400, { ok: false, reason: "request body aborted" });
    if (req.method === "POST") {
      try {
        body = JSON.parse(text);
      } catch {
        return send(400, { ok: false, reason: "malformed JSON" });
      }
    }
    try {
      const r = await route(body);
      send(r.status, r.body);
    } catch (err) {
      opts.logger.error("request handler failed", { url: req.url, error: (err as Error)?.message });
      send(500, { ok: false, reason: "internal error" });
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  opts.logger.info("listening", { url: `http://${opts.host}:${port}`, routes: Object.keys(opts.routes) });
  return {
    port,
    url: `http://${opts.host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

const TOO_LARGE = Symbol("too large");
/** Past this much discarded body the connection is cut: a client streaming forever gets no answer. */
const MAX_DISCARD_BYTES = 16 * MAX_BODY_BYTES;

/** The body as text; TOO_LARGE once it passes the limit (the rest is drained, up to a bound); undefined if aborted. */
function readBody(req: IncomingMessage): Promise<string | typeof TOO_LARGE | undefined> {
  const declared = Number(req.headers["content-length"]);
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = Number.isFinite(declared) && declared > MAX_BODY_BYTES;
    if (over) resolve(TOO_LARGE);
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (!over && size > MAX_BODY_BYTES) {
        over = true;
        chunks.length = 0;
        resolve(TOO_LARGE);
      }
      if (over) {
        if (size > MAX_DISCARD_BYTES) req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => resolve(over ? TOO_LARGE : Buffer.concat(chunks).toString("utf8")));
    req.on("error", () => resolve(over ? TOO_LARGE : undefined));
    req.on("close", () => resolve(over ? TOO_LARGE : undefined));
  });
}
