/**
 * Fault injection for store tests: failures injected on command into REAL stores, never a fake store.
 * - FaultyBackend wraps any real backend (file or S3) and makes its next operations throw EMFILE / EIO, hang, or
 *   return a cut-off body.
 * - startFaultProxy sits between the S3 client and a real s3rver and answers the next requests with a real 503,
 *   never answers (the client's timeout fires), resets the connection, or sends half a body under a full
 *   Content-Length: the failures a real network store produces, through the real SDK.
 */
import { createServer, request, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import type { BlobBackend } from "../../workloads/index.ts";

export type BackendFault = "emfile" | "eio" | "hang" | "truncate";

const errno = (code: string, message: string) => Object.assign(new Error(`${code}: ${message}`), { code });

export class FaultyBackend implements BlobBackend {
  readonly inner: BlobBackend;
  private faults: BackendFault[] = [];
  /** Operations the queued faults apply to (all when unset). */
  private only: Set<string> | undefined;
  /** Operations that met an injected fault. */
  hits = 0;

  constructor(inner: BlobBackend) {
    this.inner = inner;
  }

  get url(): string {
    return this.inner.url;
  }

  /** The next `times` operations fail with `fault` (a truncation only hits reads). */
  inject(fault: BackendFault, times = 1, ops?: ("read" | "write" | "exists")[]): void {
    for (let i = 0; i < times; i++) this.faults.push(fault);
    this.only = ops && new Set(ops);
  }

  clear(): void {
    this.faults = [];
    this.only = undefined;
  }

  private async fault(op: string, readOnly = false): Promise<BackendFault | undefined> {
    const f = this.faults[0];
    if (!f || (f === "truncate" && !readOnly) || (this.only && !this.only.has(op))) return undefined;
    this.faults.shift();
    this.hits++;
    if (f === "emfile") throw errno("EMFILE", `too many open files, ${op}`);
    if (f === "eio") throw errno("EIO", `i/o error, ${op}`);
    if (f === "hang") await new Promise(() => {});
    return f;
  }

  async read(name: string): Promise<Uint8Array | null> {
    const f = await this.fault("read", true);
    const bytes = await this.inner.read(name);
    return f === "truncate" && bytes ? bytes.subarray(0, Math.floor(bytes.byteLength / 2)) : bytes;
  }

  async write(name: string, bytes: Uint8Array): Promise<void> {
    await this.fault("write");
    return this.inner.write(name, bytes);
  }

  async exists(name: string): Promise<boolean> {
    await this.fault("exists");
    return this.inner.exists(name);
  }

  close(): void {
    this.inner.close?.();
  }
}

export type HttpFault = "503" | "hang" | "reset" | "truncate";

export type FaultProxy = {
  endpoint: string;
  inject(fault: HttpFault, times?: number): void;
  clear(): void;
  /** Requests that met an injected fault. */
  hits(): number;
  close(): Promise<void>;
};

const SLOW_DOWN =
  '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>ServiceUnavailable</Code>' +
  "<Message>injected outage</Message></Error>";

/** An HTTP proxy on 127.0.0.1 (free port) in front of a real S3 server at `upstream`. */
export async function startFaultProxy(upstream: string): Promise<FaultProxy> {
  const target = new URL(upstream);
  let faults: HttpFault[] = [];
  let hits = 0;
  const sockets = new Set<Socket>();
  const forward = (req: IncomingMessage, onResponse: (r: IncomingMessage) => void) => {
    const up = request(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
      onResponse,
    );
    up.on("error", () => req.socket.destroy());
    req.pipe(up);
  };
  const server: Server = createServer((req, res) => {
    const f = faults[0];
    const applies = f && (f !== "truncate" || req.method === "GET");
    if (!applies) return forward(req, (r) => (res.writeHead(r.statusCode ?? 502, r.headers), r.pipe(res)));
    faults.shift();
    hits++;
    if (f === "503") {
      req.resume();
      res.writeHead(503, { "content-type": "application/xml", "content-length": Buffer.byteLength(SLOW_DOWN) });
      return res.end(SLOW_DOWN);
    }
    if (f === "reset") return req.socket.destroy();
    if (f === "hang") return req.resume(); // never answered; the socket closes with the server
    forward(req, (r) => {
      const chunks: Buffer[] = [];
      r.on("data", (c: Buffer) => chunks.push(c));
      r.on("end", () => {
        const body = Buffer.concat(chunks);
        res.writeHead(r.statusCode ?? 502, r.headers);
        res.write(body.subarray(0, Math.floor(body.length / 2)), () => res.socket?.destroy());
      });
    });
  });
  server.on("connection", (s) => (sockets.add(s), s.on("close", () => sockets.delete(s))));
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    inject: (fault, times = 1) => {
      for (let i = 0; i < times; i++) faults.push(fault);
    },
    clear: () => (faults = []),
    hits: () => hits,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((ok) => server.close(() => ok()));
    },
  };
}
