// The content gate: an HTTP front for an S3-compatible server that is reachable by nobody else (the embedded
// s3rver listens on the store host's loopback behind it). Whoever holds the store's credentials can then only add
// blobs whose bytes hash to their names: no overwrite, no squatting, no delete, so a store writer cannot get an
// honest checkpoint refused however fast it writes (docs/THREATS.md). Reads are passed on and answered with a
// reader's headers only; a write reaches the server as the checked body with the few headers a content-named blob
// needs (writeHeaders: no client metadata, encoding, expiry, storage class or redirect is ever stored), and the
// client's signature fields (a completion's body is the gate's own listing of the parts it checked). s3rver 3.7 checks no SigV4
// signature, and takes a request with none (middleware/authentication.js): the key pair keeps nobody out, so the
// gate's rules are all that stands between anyone who reaches it and the store. What a writer may add is bounded
// (gateBounds.ts): a budget per writer, an expiry for uploads never completed, a free-space floor on the disk.
import { createHash } from "node:crypto";
import { mkdir, mkdtemp, readdir, readFile, rm, stat, statfs, writeFile } from "node:fs/promises";
import {
  Agent,
  createServer,
  request,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type ServerResponse,
} from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  chargeWrite,
  diskRefusal,
  GATE_MIN_FREE_BYTES,
  GATE_UPLOAD_TTL_MS,
  GATE_WRITE_BUDGET,
  uploadExpired,
  writerOf,
  type Allowance,
  type WriteBudget,
} from "./gateBounds.ts";
import {
  answerHeaders,
  emptyUploadsXml,
  gateDecision,
  listedParts,
  storedExtras,
  UPLOAD_ID,
  writeHeaders,
  type GateDecision,
} from "./gateRules.ts";

/**
 * The largest whole PUT or upload part the gate holds in memory while it hashes (S3Backend sends whole objects up
 * to 8 MiB and parts of 8 MiB; S3 itself allows 5 GiB, which a gate in front of it would have to spool to disk).
 */
export const GATE_MAX_PUT_BYTES = 64 * 1024 * 1024;
/** All the writes' bodies the gate holds in memory at once (16 of the largest; 64 of S3Backend's 8 MiB). */
export const GATE_MAX_HELD_BYTES = 1024 * 1024 * 1024;
/** A CompleteMultipartUpload body: 10,000 parts of about 100 bytes each. */
const MAX_COMPLETE_BYTES = 2 * 1024 * 1024;
/**
 * The largest header block the gate reads from the server behind (Node's default is 16 KiB): an object stored with
 * a client's metadata before the gate stripped it, or past the gate, is still read, its metadata left out.
 */
const UPSTREAM_MAX_HEADER_BYTES = 1024 * 1024;

export type ContentGate = {
  /** http://ADDRESS:PORT, the store's endpoint for every other part. */
  endpoint: string;
  /** Counts of what was refused, by S3 error code (for logs and tests). */
  refused: Record<string, number>;
  close(): Promise<void>;
};

function sendError(res: ServerResponse, status: number, code: string, message: string, extra = {}): void {
  const body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${escapeXml(message)}</Message></Error>`;
  res.writeHead(status, { "content-type": "application/xml", "content-length": Buffer.byteLength(body), ...extra });
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

/** The request to the server behind: the client's method, path and (given) headers. */
const targetOf = (upstream: URL, agent: Agent, req: IncomingMessage, headers: OutgoingHttpHeaders) => ({
  host: upstream.hostname,
  port: upstream.port,
  method: req.method,
  path: req.url,
  headers,
  agent,
  maxHeaderSize: UPSTREAM_MAX_HEADER_BYTES,
});

/**
 * Sends a read on to the server behind (Expect aside: the gate has already read the body); its answer comes back
 * with the headers a reader needs only (answerHeaders).
 */
function forward(upstream: URL, agent: Agent, req: IncomingMessage, res: ServerResponse): void {
  const headers = { ...req.headers };
  delete headers.expect;
  const out = request(targetOf(upstream, agent, req, headers), (answer) => {
    res.writeHead(answer.statusCode ?? 502, answerHeaders(answer.headers));
    answer.pipe(res);
  });
  res.on("close", () => {
    if (!res.writableFinished) out.destroy(); // the client went away (a read cut off past its bound)
  });
  out.on("error", (e) => {
    if (!res.headersSent) sendError(res, 502, "BadGateway", `store behind the gate: ${e.message}`);
    else res.destroy();
  });
  req.pipe(out);
}

type Answer = { status: number; headers: IncomingHttpHeaders; body: Buffer };

/**
 * Sends a write on with the body the gate checked and waits for the whole answer. It is never cut short when the
 * client goes away: s3rver writes an object in place (truncating it first), so a write dropped half way through
 * left an honest blob truncated (a client hanging up just after sending the honest bytes did that).
 */
function forwardWrite(upstream: URL, agent: Agent, req: IncomingMessage, body: Buffer): Promise<Answer> {
  const headers = writeHeaders(req.headers, body.byteLength);
  return new Promise((resolve, reject) => {
    const out = request(targetOf(upstream, agent, req, headers), (answer) => {
      const chunks: Buffer[] = [];
      answer.on("data", (c: Buffer) => chunks.push(c));
      answer.on("end", () =>
        resolve({ status: answer.statusCode ?? 502, headers: answer.headers, body: Buffer.concat(chunks) }),
      );
      answer.on("error", reject);
    });
    out.on("error", reject);
    out.end(body);
  });
}

function reply(res: ServerResponse, a: Answer): void {
  res.writeHead(a.status, { ...answerHeaders(a.headers), "content-length": a.body.byteLength });
  res.end(a.body);
}

/** The decision of one kind, with its fields. */
type Decided<K extends GateDecision["kind"]> = Extract<GateDecision, { kind: K }>;

const md5 = (b: Buffer) => createHash("md5").update(b).digest("hex");

export type GateOptions = {
  upstream: string;
  address: string;
  port?: number;
  /** Where copies of upload parts are kept until completion (default: a fresh temporary folder, removed on close). */
  spoolDir?: string;
  /** Bytes of writes held in memory at once (default GATE_MAX_HELD_BYTES). */
  maxHeldBytes?: number;
  /** What one writer may add (default GATE_WRITE_BUDGET). */
  budget?: WriteBudget;
  /** Uploads not completed within this are aborted and their parts removed (default GATE_UPLOAD_TTL_MS). */
  uploadTtlMs?: number;
  /** Folders on the disks writes land on (the server's and the spool's); writes keep `minFreeBytes` free there. */
  diskDirs?: string[];
  /** Default GATE_MIN_FREE_BYTES. */
  minFreeBytes?: number;
  /** Removes the server's own parts of an expired or aborted upload (s3rver keeps them: it implements no abort). */
  dropUpload?: (bucket: string, uploadId: string) => Promise<void>;
};

export async function startContentGate(o: GateOptions): Promise<ContentGate> {
  const upstream = new URL(o.upstream);
  const agent = new Agent({ keepAlive: true });
  const spool = o.spoolDir ?? (await mkdtemp(join(tmpdir(), "gpuchain-gate-")));
  const budget = o.budget ?? GATE_WRITE_BUDGET;
  const uploadTtlMs = o.uploadTtlMs ?? GATE_UPLOAD_TTL_MS;
  const minFreeBytes = o.minFreeBytes ?? GATE_MIN_FREE_BYTES;
  const diskDirs = [...new Set([...(o.diskDirs ?? []), spool])];
  const refused: Record<string, number> = {};
  const refuse = (
    req: IncomingMessage,
    res: ServerResponse,
    status: number,
    code: string,
    message: string,
    extra = {},
  ) => {
    refused[code] = (refused[code] ?? 0) + 1;
    req.resume(); // drain what the client still sends; the answer is already decided
    sendError(res, status, code, message, extra);
  };

  /** Each writer's allowance left (gateBounds.ts chargeWrite). */
  const allowances = new Map<string, Allowance>();
  /** Takes a write from its writer's budget, or sends the refusal (SlowDown with Retry-After) and says false. */
  function charged(req: IncomingMessage, res: ServerResponse, cost: { bytes: number; objects: number }): boolean {
    const who = writerOf(req.socket.remoteAddress);
    const c = chargeWrite(allowances.get(who), Date.now(), cost, budget);
    if (c.ok) return (allowances.set(who, c.left), true);
    const retryAfter = Number.isFinite(c.retryAfterS) ? { "retry-after": String(c.retryAfterS) } : {};
    refuse(req, res, 503, "SlowDown", `write budget: ${c.why}`, retryAfter);
    return false;
  }

  /** Whether a write of `incoming` bytes leaves every store disk above its floor; else the refusal is sent. */
  async function roomFor(req: IncomingMessage, res: ServerResponse, incoming: number): Promise<boolean> {
    for (const dir of diskDirs) {
      const fs = await statfs(dir);
      const why = diskRefusal(fs.bavail * fs.bsize, heldBytes, incoming, minFreeBytes);
      if (why) return (refuse(req, res, 507, "InsufficientStorage", `${dir}: ${why}`), false);
    }
    return true;
  }

  /**
   * Bytes of writes held in memory now (each counted at its announced length, or its bound when it announces
   * none, until its answer is sent). Unbounded, writes of 64 MiB each that never send their last byte grew the
   * process (gate and s3rver) by 64 MiB apiece without bound (8 of them: 103 → 612 MiB RSS); past the
   * bound a write is refused as SlowDown (the SDK retries it) and reads go on.
   */
  let heldBytes = 0;
  const maxHeldBytes = o.maxHeldBytes ?? GATE_MAX_HELD_BYTES;

  /** The body within `max` bytes, or the refusal already sent. */
  async function bodyWithin(req: IncomingMessage, res: ServerResponse, max: number): Promise<Buffer | null> {
    const announced = Number(req.headers["content-length"] ?? NaN);
    const tooLarge = () =>
      refuse(req, res, 400, "EntityTooLarge", `a write through the gate holds at most ${max} bytes`);
    if (announced > max) return (tooLarge(), null);
    const reserved = Number.isFinite(announced) ? announced : max;
    if (!(await roomFor(req, res, reserved))) return null;
    if (heldBytes + reserved > maxHeldBytes)
      return (refuse(req, res, 503, "SlowDown", "the gate holds as many bytes of writes as it may; try again"), null);
    heldBytes += reserved;
    res.once("close", () => (heldBytes -= reserved));
    const body = await readBody(req, max);
    if (!body) tooLarge();
    return body;
  }

  /** Parts being passed on now, by upload id; an upload being completed takes no more parts. */
  const partsInFlight = new Map<string, Set<number>>();
  const completing = new Set<string>();
  /** Writes of one name, one at a time (each waits for the one before it to have landed). */
  const queues = new Map<string, Promise<unknown>>();
  function oneAtATime<T>(path: string, write: () => Promise<T>): Promise<T> {
    const run = (queues.get(path) ?? Promise.resolve()).then(write, write);
    const tail = run.catch(() => undefined);
    queues.set(path, tail);
    void tail.then(() => queues.get(path) === tail && queues.delete(path));
    return run;
  }

  /**
   * Whether the server behind already holds bytes hashing to `name` under `path`. A write of them is then not
   * passed on: s3rver rewrites an object in place, truncating it first, so an honest blob rewritten with its own
   * bytes again and again (which hash to its name) was read short while each rewrite was under way. A blob that
   * no longer hashes to its name, or carries stored metadata, is still rewritten (the repair).
   */
  function held(path: string, name: string): Promise<boolean> {
    return new Promise((resolve) => {
      const r = request(
        {
          host: upstream.hostname,
          port: upstream.port,
          method: "GET",
          path: `/${path}`,
          agent,
          maxHeaderSize: UPSTREAM_MAX_HEADER_BYTES,
        },
        (a) => {
          // Stored metadata (an object from before the gate stripped it, or from past it) is rewritten away.
          if (a.statusCode !== 200 || storedExtras(a.headers).length > 0) return (a.resume(), resolve(false));
          const h = createHash("sha256");
          a.on("data", (c: Buffer) => h.update(c));
          a.on("end", () => resolve(h.digest("hex") === name));
          a.on("error", () => resolve(false));
        },
      );
      r.on("error", () => resolve(false));
      r.end();
    });
  }

  /**
   * Whether upload `id` was created through the gate for `path`. s3rver completes an upload under the key it was
   * created for, whatever key the completion names, and takes parts for any id (it makes the folder): an upload
   * created for an honest blob's name, with other bytes as its part, completed under the name of those bytes,
   * put them under the honest name.
   */
  const boundTo = async (id: string, path: string) => (await uploadOf(id))?.path === path;

  /** Upload `id` as the gate created it: its `bucket/key` and since when; null when unknown or expired. */
  async function uploadOf(id: string, nowMs = Date.now()): Promise<{ path: string; createdMs: number } | null> {
    const file = join(spool, id, ".path");
    const [path, st] = await Promise.all([readFile(file, "utf8"), stat(file)]).catch(() => [null, null]);
    if (path === null || st === null || uploadExpired(st.mtimeMs, nowMs, uploadTtlMs)) return null;
    return { path, createdMs: st.mtimeMs };
  }

  /** Forgets an upload: the gate's copies of its parts and the server's (abort, and the server's own folder). */
  async function dropUpload(id: string): Promise<void> {
    const path = await readFile(join(spool, id, ".path"), "utf8").catch(() => null);
    await rm(join(spool, id), { recursive: true, force: true });
    if (path === null) return;
    const bucket = path.split("/")[0];
    await new Promise<void>((resolve) => {
      const r = request(
        { host: upstream.hostname, port: upstream.port, method: "DELETE", path: `/${path}?uploadId=${id}`, agent },
        (a) => (a.resume(), a.on("end", resolve), a.on("error", () => resolve())),
      );
      r.on("error", () => resolve());
      r.end();
    });
    await o.dropUpload?.(bucket, id);
  }

  /** Uploads past their time, not being written or completed now: dropped (each sweep, every ttl/4 up to 1 min). */
  async function sweepUploads(): Promise<void> {
    const now = Date.now();
    for (const id of await readdir(spool).catch(() => [] as string[])) {
      if (partsInFlight.has(id) || completing.has(id)) continue;
      const st = await stat(join(spool, id, ".path")).catch(() => null);
      if (st && uploadExpired(st.mtimeMs, now, uploadTtlMs)) await dropUpload(id);
    }
  }
  let sweeping = Promise.resolve();
  const sweeper = setInterval(
    () => (sweeping = sweeping.then(sweepUploads).catch(() => undefined)),
    Math.max(50, Math.min(60_000, uploadTtlMs / 4)),
  );
  sweeper.unref();

  const notThroughGate = (req: IncomingMessage, res: ServerResponse) =>
    refuse(req, res, 404, "NoSuchUpload", "no upload of this id for this blob came through the gate");

  async function createUpload(req: IncomingMessage, res: ServerResponse, d: Decided<"create-upload">) {
    const body = await bodyWithin(req, res, MAX_COMPLETE_BYTES);
    if (!body || !charged(req, res, { bytes: 0, objects: 1 })) return;
    const a = await forwardWrite(upstream, agent, req, Buffer.alloc(0));
    const id = /<UploadId>([^<]+)<\/UploadId>/.exec(a.body.toString("utf8"))?.[1];
    if (a.status === 200) {
      if (!id || !UPLOAD_ID.test(id)) return sendError(res, 502, "BadGateway", "the store behind gave no upload id");
      await mkdir(join(spool, id), { recursive: true });
      await writeFile(join(spool, id, ".path"), d.path);
    }
    reply(res, a);
  }

  async function putBlob(req: IncomingMessage, res: ServerResponse, d: Decided<"put">) {
    const body = await bodyWithin(req, res, GATE_MAX_PUT_BYTES);
    if (!body) return;
    const actual = createHash("sha256").update(body).digest("hex");
    if (actual !== d.name)
      return refuse(req, res, 400, "BadDigest", `the bytes hash to ${actual}, not to their name ${d.name}`);
    await oneAtATime(d.path, async () => {
      if (await held(d.path, d.name))
        return reply(res, { status: 200, headers: { etag: `"${md5(body)}"` }, body: Buffer.alloc(0) });
      if (!charged(req, res, { bytes: body.byteLength, objects: 1 })) return;
      reply(res, await forwardWrite(upstream, agent, req, body));
    });
  }

  async function putPart(req: IncomingMessage, res: ServerResponse, d: Decided<"part">) {
    const body = await bodyWithin(req, res, GATE_MAX_PUT_BYTES);
    if (!body) return;
    if (!(await boundTo(d.uploadId, d.path))) return notThroughGate(req, res);
    if (!charged(req, res, { bytes: body.byteLength, objects: 0 })) return;
    const inFlight = partsInFlight.get(d.uploadId) ?? new Set<number>();
    // s3rver does not check the ETags a completion lists: the gate's copy of a part must be the very part
    // s3rver holds. Two sends of one part at once landed in either order at each (or mixed at s3rver).
    if (inFlight.has(d.partNumber) || completing.has(d.uploadId))
      return refuse(req, res, 503, "SlowDown", `part ${d.partNumber} of this upload is being sent or completed`);
    inFlight.add(d.partNumber);
    partsInFlight.set(d.uploadId, inFlight);
    try {
      const copy = join(spool, d.uploadId, String(d.partNumber));
      await rm(copy, { force: true }); // until s3rver holds this part whole, the gate holds no copy of it
      const a = await forwardWrite(upstream, agent, req, body);
      const etag = String(a.headers.etag ?? "")
        .replace(/"/g, "")
        .toLowerCase();
      if (a.status === 200 && etag === md5(body)) await writeFile(copy, body);
      reply(res, a);
    } finally {
      inFlight.delete(d.partNumber);
      if (inFlight.size === 0) partsInFlight.delete(d.uploadId);
    }
  }

  async function complete(req: IncomingMessage, res: ServerResponse, d: Decided<"complete">) {
    const body = await bodyWithin(req, res, MAX_COMPLETE_BYTES);
    if (!body) return;
    const parts = listedParts(body.toString("utf8"));
    if (!parts) return refuse(req, res, 400, "MalformedXML", "no parts with PartNumber and ETag listed");
    if (!(await boundTo(d.uploadId, d.path))) return notThroughGate(req, res);
    // s3rver assembles the parts in the order of their numbers, whatever order the completion lists them in.
    if (parts.some((p, i) => i > 0 && p.partNumber <= parts[i - 1].partNumber))
      return refuse(req, res, 400, "InvalidPartOrder", "the parts must be listed in ascending order, each once");
    if (partsInFlight.has(d.uploadId) || completing.has(d.uploadId))
      return refuse(req, res, 503, "SlowDown", "parts of this upload are still being sent, or it is being completed");
    completing.add(d.uploadId);
    try {
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
      await oneAtATime(d.path, async () => {
        const [bucket, ...key] = d.path.split("/");
        if (await held(d.path, d.name)) {
          await rm(dir, { recursive: true, force: true });
          const xml = `<?xml version="1.0" encoding="UTF-8"?>\n<CompleteMultipartUploadResult><Bucket>${bucket}</Bucket><Key>${key.join("/")}</Key><ETag>"${md5(Buffer.from(d.name))}-${parts.length}"</ETag></CompleteMultipartUploadResult>`;
          return reply(res, { status: 200, headers: { "content-type": "application/xml" }, body: Buffer.from(xml) });
        }
        // The gate's own listing of the parts it checked, not the client's XML: s3rver's XML parser and the
        // regex above read a body differently (a part in a comment, a <Part> with an attribute).
        const xml = `<CompleteMultipartUpload>${parts.map((p) => `<Part><PartNumber>${p.partNumber}</PartNumber><ETag>"${p.etag}"</ETag></Part>`).join("")}</CompleteMultipartUpload>`;
        const a = await forwardWrite(upstream, agent, req, Buffer.from(xml));
        if (a.status === 200) await rm(dir, { recursive: true, force: true });
        reply(res, a);
      });
    } finally {
      completing.delete(d.uploadId);
    }
  }

  async function handle(req: IncomingMessage, res: ServerResponse, d: GateDecision): Promise<void> {
    switch (d.kind) {
      case "refuse":
        return refuse(req, res, d.status, d.code, d.message);
      case "read":
        return forward(upstream, agent, req, res);
      case "abort":
        await dropUpload(d.uploadId);
        req.resume();
        res.writeHead(204, { "content-length": 0 });
        return void res.end();
      case "list-uploads": {
        req.resume();
        const xml = Buffer.from(emptyUploadsXml(d.bucket, d.prefix));
        res.writeHead(200, { "content-type": "application/xml", "content-length": xml.byteLength });
        return void res.end(xml);
      }
      case "create-upload":
        return createUpload(req, res, d);
      case "put":
        return putBlob(req, res, d);
      case "part":
        return putPart(req, res, d);
      case "complete":
        return complete(req, res, d);
    }
  }

  const server = createServer((req, res) => {
    Promise.resolve()
      .then(() => handle(req, res, gateDecision(req.method ?? "", req.url ?? "/", req.headers)))
      .catch((e: Error) => {
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
        clearInterval(sweeper);
        server.closeAllConnections();
        server.close(() => resolve());
        agent.destroy(); // the server behind waits for no kept-alive socket of ours
      }).then(() => (o.spoolDir ? undefined : rm(spool, { recursive: true, force: true }))),
  };
}
