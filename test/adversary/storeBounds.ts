/**
 * What anyone who reaches the content gate may add. The gate admitted every correct write, so a writer added junk
 * blobs and never-completed multipart uploads that nothing expired (94 MiB in 3.4 s), and a full disk ended s3rver;
 * it refused a standard client's honest multipart write (minio's client lists uploads in progress first: 403). Now
 * each writer has a budget, an upload not completed in time is dropped with its parts (the gate's copies and
 * s3rver's), writes stop above a free-space floor while reads go on, and a listing of uploads answers empty. The
 * rules are pure (workloads/store/gateBounds.ts); here real s3rver behind the real gate, real disk, the real SDK.
 */
import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  ListMultipartUploadsCommand,
  S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { expect } from "chai";
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, readdir, rm, stat, statfs } from "node:fs/promises";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BlobStore, S3Backend } from "../../workloads/index.ts";
import { S3RVER_CREDENTIALS, startEmbeddedS3, type EmbeddedS3 } from "../../workloads/store/embedded.ts";
import { startContentGate } from "../../workloads/store/gate.ts";
import { chargeWrite, diskRefusal, uploadExpired, type WriteBudget } from "../../workloads/store/gateBounds.ts";

const B = "gpuchain";
const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
type Answer = { status: number; headers: Record<string, unknown>; body: Buffer };

/** A raw request to `endpoint` (s3rver checks no signature). */
function send(endpoint: string, method: string, path: string, body?: Buffer): Promise<Answer> {
  const u = new URL(endpoint);
  return new Promise((resolve, reject) => {
    const r = request(
      {
        host: u.hostname,
        port: u.port,
        method,
        path,
        headers: body ? { "content-length": String(body.byteLength) } : {},
      },
      (a) => {
        const chunks: Buffer[] = [];
        a.on("data", (c: Buffer) => chunks.push(c));
        a.on("end", () => resolve({ status: a.statusCode ?? 0, headers: a.headers, body: Buffer.concat(chunks) }));
        a.on("error", reject);
      },
    );
    r.on("error", reject);
    // The gate may answer a refused write (507, 503) and close before the whole body is sent: the answer is what the
    // test reads, and the client's late write error on that socket is expected, not a failure of the run.
    r.on("socket", (s) => s.on("error", () => {}));
    r.end(body);
  });
}

let n = 0;
const junk = (size: number) => Buffer.concat([Buffer.from(`junk ${n++} `), randomBytes(size)]);
/** A correct write of `bytes` (it hashes to its name) under `p/`. */
const putBlob = (endpoint: string, bytes: Buffer) => send(endpoint, "PUT", `/${B}/p/${sha256(bytes)}.blob`, bytes);

describe("store gate bounds: the rules (pure)", function () {
  const budget: WriteBudget = { bytes: 1000, objects: 3, perMs: 1000 };

  it("a writer's budget: taken by each write, refused past it with the wait, refilled with time", function () {
    let c = chargeWrite(undefined, 0, { bytes: 600, objects: 1 }, budget);
    expect(c.ok).to.equal(true);
    const left = c.ok ? c.left : undefined;
    c = chargeWrite(left, 0, { bytes: 600, objects: 1 }, budget);
    expect(c).to.include({ ok: false, retryAfterS: 1 });
    expect(chargeWrite(left, 200, { bytes: 600, objects: 1 }, budget).ok, "after 0.2 s: 200 bytes back").to.equal(true);
    expect(chargeWrite(undefined, 0, { bytes: 1001, objects: 0 }, budget)).to.include({ ok: false });
  });

  it("an upload expires at its time; a write keeps the floor free, counting writes on their way", function () {
    expect(uploadExpired(0, 999, 1000)).to.equal(false);
    expect(uploadExpired(0, 1000, 1000)).to.equal(true);
    expect(diskRefusal(10_000, 0, 1_000, 9_000)).to.equal(null);
    expect(diskRefusal(10_000, 1, 1_000, 9_000)).to.be.a("string");
  });
});

describe("adversary: what one writer may add through the content gate", function () {
  this.timeout(60_000);
  let dir = "";
  const servers: EmbeddedS3[] = [];
  const gates: { close(): Promise<void> }[] = [];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "gpuchain-adversary-bounds-"));
  });
  afterEach(async () => {
    for (const g of gates.splice(0)) await g.close();
    for (const s of servers.splice(0)) await s.close();
  });
  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const embedded = async (name: string, bounds: Parameters<typeof startEmbeddedS3>[0]["bounds"] = {}) => {
    const s = await startEmbeddedS3({ dir: join(dir, name), bounds });
    servers.push(s);
    return s;
  };

  it("a standard S3 client lists uploads in progress before its multipart write: an empty list, and its 12 MiB write lands (was: 403)", async function () {
    const server = await embedded("list");
    const client = new S3Client({
      region: "us-east-1",
      endpoint: server.endpoint,
      forcePathStyle: true,
      credentials: S3RVER_CREDENTIALS,
    });
    const bytes = randomBytes(12 * 1024 * 1024);
    const Key = `p/${sha256(bytes)}.blob`;
    try {
      // What minio's client does first (listIncompleteUploads with the key as prefix).
      const listed = await client.send(new ListMultipartUploadsCommand({ Bucket: B, Prefix: Key }));
      expect(listed.Uploads ?? [], "uploads in progress: none named").to.deep.equal([]);
      expect(listed.IsTruncated).to.equal(false);
      const up = await client.send(new CreateMultipartUploadCommand({ Bucket: B, Key }));
      const parts = [];
      for (const [PartNumber, Body] of [
        [1, bytes.subarray(0, 8 << 20)],
        [2, bytes.subarray(8 << 20)],
      ] as const) {
        const r = await client.send(new UploadPartCommand({ Bucket: B, Key, UploadId: up.UploadId, PartNumber, Body }));
        parts.push({ PartNumber, ETag: r.ETag });
      }
      await client.send(
        new CompleteMultipartUploadCommand({
          Bucket: B,
          Key,
          UploadId: up.UploadId,
          MultipartUpload: { Parts: parts },
        }),
      );
    } finally {
      client.destroy();
    }
    const store = new BlobStore(
      new S3Backend(
        { bucket: B, prefix: "p" },
        { region: "us-east-1", credentials: S3RVER_CREDENTIALS, endpoint: server.endpoint },
      ),
    );
    expect(Buffer.from(await store.get(`0x${sha256(bytes)}`)).equals(bytes), "read back").to.equal(true);
    store.close();
  });

  it("a writer past its byte budget is refused (SlowDown, Retry-After) while reads and rewrites of held blobs go on", async function () {
    const server = await embedded("bytes", { budget: { bytes: 1024 * 1024, objects: 1000, perMs: 3_600_000 } });
    const first = junk(200 * 1024);
    expect((await putBlob(server.endpoint, first)).status).to.equal(200);
    let admitted = 1;
    let last: Answer | undefined;
    for (let i = 0; i < 20; i++) {
      last = await putBlob(server.endpoint, junk(200 * 1024));
      if (last.status !== 200) break;
      admitted++;
    }
    expect(admitted, "200 KiB writes admitted within 1 MiB").to.equal(5);
    expect(last!.status, last!.body.toString()).to.equal(503);
    expect(last!.body.toString()).to.contain("SlowDown");
    expect(Number(last!.headers["retry-after"]), "seconds to wait").to.be.above(0);
    const read = await send(server.endpoint, "GET", `/${B}/p/${sha256(first)}.blob`);
    expect(read.status, "a read meanwhile").to.equal(200);
    expect((await putBlob(server.endpoint, first)).status, "bytes already held cost nothing").to.equal(200);
  });

  it("a writer past its object budget is refused until the budget refills", async function () {
    const server = await embedded("objects", { budget: { bytes: 1 << 30, objects: 2, perMs: 1000 } });
    expect((await putBlob(server.endpoint, junk(16))).status).to.equal(200);
    expect((await putBlob(server.endpoint, junk(16))).status).to.equal(200);
    expect((await putBlob(server.endpoint, junk(16))).status, "a third object within 1 s").to.equal(503);
    await pause(700);
    expect((await putBlob(server.endpoint, junk(16))).status, "after 0.7 s (1.4 objects back)").to.equal(200);
  });

  it("an upload never completed is dropped after its time: the gate's copies, s3rver's parts, and its id (was: kept for good)", async function () {
    const server = await embedded("expiry", { uploadTtlMs: 400 });
    const bytes = junk(1024);
    const key = `p/${sha256(bytes)}.blob`;
    const created = await send(server.endpoint, "POST", `/${B}/${key}?uploads`);
    const id = /<UploadId>([^<]+)<\/UploadId>/.exec(created.body.toString())![1];
    expect((await send(server.endpoint, "PUT", `/${B}/${key}?partNumber=1&uploadId=${id}`, bytes)).status).to.equal(
      200,
    );
    const parts = join(dir, "expiry", B, "._S3rver_uploads", id);
    expect(
      await stat(parts).then(
        () => true,
        () => false,
      ),
      "s3rver holds the part",
    ).to.equal(true);
    await pause(1_000);
    expect(
      await stat(parts).then(
        () => true,
        () => false,
      ),
      "s3rver's parts after the expiry",
    ).to.equal(false);
    const late = await send(server.endpoint, "PUT", `/${B}/${key}?partNumber=2&uploadId=${id}`, bytes);
    expect(late.status, "a part for the expired upload").to.equal(404);

    // The gate's own copies, in a spool folder the test can see.
    const spoolDir = await mkdtemp(join(dir, "spool-"));
    const gate = await startContentGate({
      upstream: server.upstream,
      address: "127.0.0.1",
      spoolDir,
      uploadTtlMs: 400,
    });
    gates.push(gate);
    const again = await send(gate.endpoint, "POST", `/${B}/${key}?uploads`);
    const id2 = /<UploadId>([^<]+)<\/UploadId>/.exec(again.body.toString())![1];
    await send(gate.endpoint, "PUT", `/${B}/${key}?partNumber=1&uploadId=${id2}`, bytes);
    expect(await readdir(spoolDir), "the gate's copy while the upload is young").to.deep.equal([id2]);
    await pause(1_000);
    expect(await readdir(spoolDir), "the gate's copies after the expiry").to.deep.equal([]);
  });

  it("writes stop above the disk's free-space floor while reads go on (was: a full disk ended s3rver)", async function () {
    const server = await embedded("disk");
    const held = junk(1024);
    expect((await putBlob(server.endpoint, held)).status).to.equal(200);
    const free = async () => {
      const s = await statfs(join(dir, "disk"));
      return s.bavail * s.bsize;
    };
    /** A gate in front of the same s3rver whose floor is `below` bytes under the free space now. */
    const gateWithFloor = async (below: number) => {
      const gate = await startContentGate({
        upstream: server.upstream,
        address: "127.0.0.1",
        diskDirs: [join(dir, "disk")],
        minFreeBytes: (await free()) - below,
      });
      gates.push(gate);
      return gate;
    };

    const full = await gateWithFloor(-(1 << 30)); // the disk is already 1 GiB under the floor
    const refused = await putBlob(full.endpoint, junk(1024));
    expect(refused.status, refused.body.toString()).to.equal(507);
    const read = await send(full.endpoint, "GET", `/${B}/p/${sha256(held)}.blob`);
    expect(read.status, "a read meanwhile").to.equal(200);
    expect(sha256(read.body)).to.equal(sha256(held));

    const nearly = await gateWithFloor(64 << 20); // 64 MiB left above the floor
    expect((await putBlob(nearly.endpoint, junk(1024))).status, "a small write above the floor").to.equal(200);
    const nearer = await gateWithFloor(16 << 20);
    expect((await putBlob(nearer.endpoint, junk(32 << 20))).status, "a write that would cross it").to.equal(507);
  });
});
