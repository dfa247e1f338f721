/**
 * A tiny JSON-over-HTTP server (node:http) for the keepers that receive messages: the coordinator
 * (`POST /heartbeat`) and the verdict collector (`POST /signatures`). Handlers get the parsed body and return a
 * status and a JSON body; malformed JSON is a 400, unknown routes a 404, oversized bodies a 413.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "../sdk/log.ts";

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

const MAX_BODY_BYTES = 64 * 1024;

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
    try {
      const text = await readBody(req);
      if (req.method === "POST") body = JSON.parse(text);
    } catch (err) {
      const tooLarge = (err as Error).message === "too large";
      return send(tooLarge ? 413 : 400, { ok: false, reason: tooLarge ? "body too large" : "malformed JSON" });
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

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY_BYTES) {
        reject(new Error("too large"));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}
