// The content gate: an HTTP front for an S3-compatible server that is reachable by nobody else (the embedded
// s3rver listens on the store host's loopback behind it). Whoever holds the store's credentials can then only add
// blobs whose bytes hash to their names: no overwrite, no squatting, no delete, so a store writer cannot get an
// honest checkpoint refused however fast it writes (issue 19, docs/THREATS.md). Reads pass through unchanged;
// requests are forwarded byte for byte with their own signature, so the server behind checks credentials as before.
import { createHash } from "node:crypto";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { Agent, createServer, request, type IncomingMessage, type ServerResponse } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gateDecision, listedParts, type GateDecision } from "./gateRules.ts";

/**
 * The largest whole PUT or upload part the gate holds in memory while it hashes (S3Backend sends whole objects up
 * to 8 MiB and parts of 8 MiB; S3 itself allows 5 GiB, which a gate in front of it would have to spool to disk).
 */
export const GATE_MAX_PUT_BYTES = 64 * 1024 * 1024;
/** A CompleteMultipartUpload body: 10,000 parts of about 100 bytes each. */
const MAX_COMPLETE_BYTES = 2 * 1024 * 1024;

export type ContentGate = {
  /** http://ADDRESS:PORT, the store's endpoint for every other part. */
  endpoint: string;
  /** Counts of what was refused, by S3 error code (for logs and tests). */
  refused: Record<string, number>;
  close(): Promise<void>;
};

function sendError(res: ServerResponse, status: number, code: string, message: string): void {
  const body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${escapeXml(message)}</Message></Error>`;
  res.writeHead(status, { "content-type": "application/xml", "content-length": Buffer.byteLength(body) });
  res.end(body);
}

const escapeXml = (s: string) => s.replace(/[<>&]/g, (c) => ({ "<": "&lt;", ">": "&gt;", "&": "&amp;" })[c]!);

/** The request's body, or null when it holds more than `max` bytes (then the rest is not read). */
function readBody(req: IncomingMessage, max: number): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let got = 0;
    req.on("data", (c: Buffer) => {
      got += c.byteLength;
      if (got > max) {
        req.pause();
        resolve(null);
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => resolve(Buffer.concat(chunks, got)));
    req.on("error", reject);
  });
}

/** Sends the request on to the server behind, unchanged (Expect aside: the gate has already read the body). */
function forward(upstream: URL, agent: Agent, req: IncomingMessage, res: ServerResponse, body?: Buffer): void {
  const headers = { ...req.headers };
  delete headers.expect;
  const out = request(
    { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers, agent },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  res.on("close", () => {
    if (!res.writableFinished) out.destroy(); // the client went away (a read cut off past its bound)
  });
  out.on("error", (e) => {
    if (!res.headersSent) sendError(res, 502, "BadGateway", `store behind the gate: ${e.message}`);
    else res.destroy();
  });
  if (body) out.end(body);
  else req.pipe(out);
}

const md5 = (b: Buffer) => createHash("md5").update(b).digest("hex");

export async function startContentGate(o: {
  upstream: string;
  address: string;
  port?: number;
  /** Where copies of upload parts are kept until completion (default: a fresh temporary folder, removed on close). */
  spoolDir?: string;
}): Promise<ContentGate> {
  const upstream = new URL(o.upstream);
  const agent = new Agent({ keepAlive: true });
  const spool = o.spoolDir ?? (await mkdtemp(join(tmpdir(), "gpuchain-gate-")));
  const refused: Record<string, number> = {};
  const refuse = (req: IncomingMessage, res: ServerResponse, status: number, code: string, message: string) => {
    refused[code] = (refused[code] ?? 0) + 1;
    req.resume(); // drain what the client still sends; the answer is already decided
    sendError(res, status, code, message);
  };

  /** The body within `max` bytes, or the refusal already sent. */
  async function bodyWithin(req: IncomingMessage, res: ServerResponse, max: number): Promise<Buffer | null> {
    const announced = Number(req.headers["content-length"] ?? NaN);
    const tooLarge = () =>
      refuse(req, res, 400, "EntityTooLarge", `a write through the gate holds at most ${max} bytes`);
    if (announced > max) return (tooLarge(), null);
    const body = await readBody(req, max);
    if (!body) tooLarge();
    return body;
  }

  async function handle(req: IncomingMessage, res: ServerResponse, d: GateDecision): Promise<void> {
    if (d.kind === "refuse") return refuse(req, res, d.status, d.code, d.message);
    if (d.kind === "read" || d.kind === "create-upload") return forward(upstream, agent, req, res);
    if (d.kind === "abort") {
      await rm(join(spool, d.uploadId), { recursive: true, force: true });
      return forward(upstream, agent, req, res);
    }
    if (d.kind === "put") {
      const body = await bodyWithin(req, res, GATE_MAX_PUT_BYTES);
      if (!body) return;
      const actual = createHash("sha256").update(body).digest("hex");
      if (actual !== d.name)
        return refuse(req, res, 400, "BadDigest", `the bytes hash to ${actual}, not to their name ${d.name}`);
      return forward(upstream, agent, req, res, body);
    }
    if (d.kind === "part") {
      const body = await bodyWithin(req, res, GATE_MAX_PUT_BYTES);
      if (!body) return;
      await mkdir(join(spool, d.uploadId), { recursive: true });
      await writeFile(join(spool, d.uploadId, String(d.partNumber)), body);
      return forward(upstream, agent, req, res, body);
    }
    const body = await bodyWithin(req, res, MAX_COMPLETE_BYTES);
    if (!body) return;
    const parts = listedParts(body.toString("utf8"));
    if (!parts) return refuse(req, res, 400, "MalformedXML", "no parts with PartNumber and ETag listed");
    // The ETags are what the server behind checks its parts against: the same ETags here bind its parts to the
    // copies hashed here (an upload's id is its uploader's secret, so nobody else wrote those parts anyway).
    const dir = join(spool, d.uploadId);
    const whole = createHash("sha256");
    for (const p of parts) {
      const copy = await readFile(join(dir, String(p.partNumber))).catch(() => null);
      if (!copy || md5(copy) !== p.etag)
        return refuse(req, res, 400, "InvalidPart", `part ${p.partNumber} is not the one the gate passed on`);
      whole.update(copy);
    }
    const actual = whole.digest("hex");
    if (actual !== d.name)
      return refuse(req, res, 400, "BadDigest", `the parts hash to ${actual}, not to their name ${d.name}`);
    res.once("finish", () => void rm(dir, { recursive: true, force: true }));
    return forward(upstream, agent, req, res, body);
  }

  const server = createServer((req, res) => {
    const decision = gateDecision(req.method ?? "", req.url ?? "/", req.headers);
    handle(req, res, decision).catch((e: Error) => {
      if (!res.headersSent) sendError(res, 500, "InternalError", `content gate: ${e.message}`);
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(o.port ?? 0, o.address, () => resolve());
  });
  const port = (server.address() as { port: number }).port;
  return {
    endpoint: `http://${o.address.includes(":") ? `[${o.address}]` : o.address}:${port}`,
    refused,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
        agent.destroy(); // the server behind waits for no kept-alive socket of ours
      }).then(() => (o.spoolDir ? undefined : rm(spool, { recursive: true, force: true }))),
  };
}
