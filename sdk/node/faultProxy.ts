/**
 * A JSON-RPC fault proxy on loopback, in front of a loopback node (anvil): added latency, and a seeded share of
 * requests answered HTTP 429, answered 5xx, dropped (forwarded, then the socket destroyed before any answer: the
 * call may have taken effect, the caller cannot know), or answered with a truncated body (the first part of the
 * node's JSON, status 200). Every injected fault is counted by kind, and every request's arrival time is kept, so a
 * test (or a rehearsal run) can show requests per second as the node saw them.
 *
 * Used by the RPC tests (test/sdk/rpcFaults.ts) and meant for `npm start -- --network rehearsal`.
 */
import { mulberry32 } from "../run/random.ts";
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import { isLoopbackUrl } from "./rpc.ts";

export type ProxyFault = "http429" | "http5xx" | "drop" | "truncate";

export interface FaultProxyOptions {
  /** The node behind it (loopback only). */
  target: string;
  /** Port to listen on, on 127.0.0.1 (default: any free one). */
  port?: number;
  /** Seed for every random choice (latency and faults): a run replays exactly. */
  seed?: number;
  /** Added latency per request, uniform in [min, max] ms. */
  latencyMs?: [number, number];
  /** Shares of requests, each in [0, 1]. */
  rate429?: number;
  rate5xx?: number;
  dropRate?: number;
  truncateRate?: number;
  /** Sent with each 429 as `Retry-After` (seconds), when set. */
  retryAfterS?: number;
  /** Decides a request's fault instead of the rates (tests): undefined = forward faithfully. */
  script?: (call: { n: number; methods: string[] }) => ProxyFault | "pass" | undefined;
}

export interface FaultCounts {
  /** JSON-RPC requests (POST); a browser's CORS preflights are counted apart and never faulted. */
  requests: number;
  preflights: number;
  forwarded: number;
  http429: number;
  http5xx: number;
  drop: number;
  truncate: number;
  /** Arrival time of each request (ms since the proxy started), the newest 100 000. */
  arrivals: number[];
  /** JSON-RPC methods seen, with counts. */
  methods: Record<string, number>;
}

export class FaultProxy {
  readonly counts: FaultCounts = emptyCounts();
  url = "";
  private o: FaultProxyOptions;
  private readonly random: () => number;
  private readonly server: Server;
  private readonly startedAt = performance.now();
  private readonly target: URL;

  constructor(o: FaultProxyOptions) {
    if (!isLoopbackUrl(o.target)) throw new Error(`the fault proxy fronts a loopback node only, got ${o.target}`);
    this.o = { ...o };
    this.target = new URL(o.target);
    this.random = mulberry32(o.seed ?? 1);
    // A caller that hangs up mid-request (its own timeout) fails the read of its body: drop that exchange, nothing else.
    this.server = createServer((req, res) => void this.handle(req, res).catch(() => res.destroy()));
    this.server.keepAliveTimeout = 5_000;
  }

  /** Changes rates, latency or script from now on (e.g. a 429 storm, then calm). */
  set(o: Partial<Omit<FaultProxyOptions, "target" | "port" | "seed">>): void {
    this.o = { ...this.o, ...o };
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(this.o.port ?? 0, "127.0.0.1", () => resolve());
    });
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Requests that arrived in each whole second since the start. */
  perSecond(): number[] {
    const out: number[] = [];
    for (const t of this.counts.arrivals) {
      const s = Math.floor(t / 1000);
      while (out.length <= s) out.push(0);
      out[s]++;
    }
    return out;
  }

  /** Injected faults as one line: `proxy requests 400 forwarded 372 429=20 5xx=0 drop=4 truncate=4`. */
  summary(): string {
    const c = this.counts;
    return `proxy requests ${c.requests} forwarded ${c.forwarded} 429=${c.http429} 5xx=${c.http5xx} drop=${c.drop} truncate=${c.truncate}`;
  }

  private pick(n: number, methods: string[]): ProxyFault | undefined {
    const scripted = this.o.script?.({ n, methods });
    if (scripted === "pass") return undefined;
    if (scripted) return scripted;
    const r = this.random();
    let edge = 0;
    for (const [fault, rate] of [
      ["http429", this.o.rate429],
      ["http5xx", this.o.rate5xx],
      ["drop", this.o.dropRate],
      ["truncate", this.o.truncateRate],
    ] as const) {
      edge += rate ?? 0;
      if (r < edge) return fault;
    }
    return undefined;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const c = this.counts;
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    if (req.method !== "POST") {
      // A browser's CORS preflight (the dashboard reads the chain itself): passed through, never faulted or counted.
      c.preflights++;
      await this.pass(req, res, body);
      return;
    }
    const n = ++c.requests;
    c.arrivals.push(performance.now() - this.startedAt);
    if (c.arrivals.length > 100_000) c.arrivals.shift();
    const methods = methodsOf(body);
    for (const m of methods) c.methods[m] = (c.methods[m] ?? 0) + 1;
    const [lo, hi] = this.o.latencyMs ?? [0, 0];
    const latency = lo + this.random() * Math.max(0, hi - lo);
    const fault = this.pick(n, methods);
    if (latency > 0) await new Promise((r) => setTimeout(r, latency));
    // Fault answers carry the CORS header a node sends, so a browser sees the status (a 429), not a CORS failure.
    const cors = { "access-control-allow-origin": "*" };
    if (fault === "http429") {
      c.http429++;
      const headers: Record<string, string> = { "content-type": "text/plain", ...cors };
      if (this.o.retryAfterS !== undefined) headers["retry-after"] = String(this.o.retryAfterS);
      res.writeHead(429, headers).end("Too Many Requests");
      return;
    }
    if (fault === "http5xx") {
      c.http5xx++;
      res.writeHead(503, { "content-type": "text/plain", ...cors }).end("Service Unavailable");
      return;
    }
    let answer: Upstream;
    try {
      answer = await this.forward(req, body);
    } catch {
      res.destroy(); // the node is down: so is the proxy, as a caller sees it
      return;
    }
    c.forwarded++;
    if (fault === "drop") {
      c.drop++;
      req.socket.destroy();
      return;
    }
    if (fault === "truncate" && answer.body.length > 1) {
      c.truncate++;
      const cut = answer.body.subarray(0, Math.max(1, Math.floor(answer.body.length * this.random())));
      res.writeHead(200, { ...answer.headers, "content-length": cut.length }).end(cut);
      return;
    }
    res.writeHead(answer.status, { ...answer.headers, "content-length": answer.body.length }).end(answer.body);
  }

  private async pass(req: IncomingMessage, res: ServerResponse, body: Buffer): Promise<void> {
    try {
      const answer = await this.forward(req, body);
      res.writeHead(answer.status, { ...answer.headers, "content-length": answer.body.length }).end(answer.body);
    } catch {
      res.destroy();
    }
  }

  /** The request as it came (method, the headers that matter, body); the node's answer with its own headers. */
  private forward(req: IncomingMessage, body: Buffer): Promise<Upstream> {
    const headers: Record<string, string | string[]> = { "content-length": String(body.length) };
    for (const h of ["content-type", "origin", "access-control-request-method", "access-control-request-headers"]) {
      const v = req.headers[h];
      if (v !== undefined) headers[h] = v;
    }
    return new Promise((resolve, reject) => {
      const up = httpRequest(
        {
          host: this.target.hostname,
          port: this.target.port,
          path: this.target.pathname + this.target.search,
          method: req.method ?? "POST",
          headers,
        },
        (r) => {
          const parts: Buffer[] = [];
          r.on("data", (d: Buffer) => parts.push(d));
          r.on("end", () => {
            const kept: Record<string, string | string[]> = {};
            for (const [k, v] of Object.entries(r.headers)) {
              if (v !== undefined && !HOP_BY_HOP.has(k)) kept[k] = v;
            }
            resolve({ status: r.statusCode ?? 502, headers: kept, body: Buffer.concat(parts) });
          });
          r.on("error", reject);
        },
      );
      up.on("error", reject);
      up.end(body);
    });
  }
}

interface Upstream {
  status: number;
  headers: Record<string, string | string[]>;
  body: Buffer;
}

const HOP_BY_HOP = new Set(["content-length", "transfer-encoding", "connection", "keep-alive"]);

function emptyCounts(): FaultCounts {
  return {
    requests: 0,
    forwarded: 0,
    http429: 0,
    http5xx: 0,
    drop: 0,
    truncate: 0,
    preflights: 0,
    arrivals: [],
    methods: {},
  };
}

function methodsOf(body: Buffer): string[] {
  try {
    const parsed = JSON.parse(body.toString("utf8")) as { method?: string } | { method?: string }[];
    return (Array.isArray(parsed) ? parsed : [parsed]).map((p) => String(p?.method ?? "?"));
  } catch {
    return ["?"];
  }
}

/** Starts a proxy in front of `o.target`; `stop()` it when done. */
export function startFaultProxy(o: FaultProxyOptions): Promise<FaultProxy> {
  return new FaultProxy(o).start();
}
