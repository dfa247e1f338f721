/**
 * The content gate stores bytes, not requests. It checked a write's hash and passed the client's headers on to
 * s3rver, which keeps every x-amz-meta-* header (and encoding, type, expiry, storage class, redirect) and returns
 * them with every read. A correct PUT with a 16,200-byte metadata header was accepted; from then on every read,
 * existence check and re-put of that name failed at the gate's own client ("Header overflow" → 502): verifiers
 * abstained, the maker could not put it again (its put stopped at the failed existence check), so a reporter held
 * its job undecided, or a rival blocked an honest provider's boundary state. Real s3rver behind the real gate, the
 * real SDK client (S3Backend) and raw HTTP writes.
 */
import {
  CreateMultipartUploadCommand,
  S3Client,
  UploadPartCommand,
  CompleteMultipartUploadCommand,
} from "@aws-sdk/client-s3";
import { expect } from "chai";
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { request, type IncomingHttpHeaders } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BlobStore, S3Backend, StoreUnavailableError, UnreadableBlobError } from "../../workloads/index.ts";
import { S3RVER_CREDENTIALS, startEmbeddedS3, type EmbeddedS3 } from "../../workloads/store/embedded.ts";

const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");
/** Close to the 16 KiB a Node server reads of a request's headers: the stored answer then overflows every reader. */
const PAD = "m".repeat(16_200);

type Answer = { status: number; headers: IncomingHttpHeaders; body: Buffer };

/** A raw request (s3rver checks no signature), read with room for any header block the server may send. */
function send(endpoint: string, method: string, path: string, body?: Buffer, headers: Record<string, string> = {}) {
  const u = new URL(endpoint);
  return new Promise<Answer>((resolve, reject) => {
    const r = request(
      {
        host: u.hostname,
        port: u.port,
        method,
        path,
        maxHeaderSize: 1 << 20,
        headers: { ...headers, ...(body ? { "content-length": String(body.byteLength) } : {}) },
      },
      (a) => {
        const chunks: Buffer[] = [];
        a.on("data", (c: Buffer) => chunks.push(c));
        a.on("end", () => resolve({ status: a.statusCode ?? 0, headers: a.headers, body: Buffer.concat(chunks) }));
        a.on("error", reject);
      },
    );
    r.on("error", reject);
    r.end(body);
  });
}

/** The headers s3rver stored with an object that a blob never needs. */
const extras = (h: IncomingHttpHeaders) =>
  Object.keys(h).filter(
    (k) =>
      k.startsWith("x-amz-meta-") ||
      [
        "content-encoding",
        "content-disposition",
        "content-language",
        "cache-control",
        "expires",
        "x-amz-storage-class",
        "x-amz-website-redirect-location",
      ].includes(k),
  );

describe("adversary: the content gate stores bytes, not requests (a writer's metadata on correct bytes)", function () {
  this.timeout(60_000);
  const B = "gpuchain";
  let dir = "";
  let server: EmbeddedS3;
  let n = 0;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "gpuchain-adversary-metadata-"));
    server = await startEmbeddedS3({ dir });
  });
  after(async () => {
    await server?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** A store on `endpoint` whose retries are short (a failure shows in a second, not after the backoff). */
  const storeOn = (endpoint: string, prefix = "p") =>
    new BlobStore(
      new S3Backend({ bucket: B, prefix }, { region: "us-east-1", credentials: S3RVER_CREDENTIALS, endpoint }),
      { retry: { attempts: 2, baseDelayMs: 5 } },
    );
  const fresh = () => Buffer.concat([Buffer.from(`a boundary state ${n++} `), randomBytes(256)]);
  const outcome = (p: Promise<unknown>) =>
    p.then(
      () => "done",
      (e: Error) => e.constructor.name,
    );

  it("a 16,200-byte metadata header on a correct PUT: later reads, existence checks and re-puts still work (was: 502 for good)", async function () {
    const bytes = fresh();
    const key = `p/${sha256(bytes)}.blob`;
    const planted = await send(server.endpoint, "PUT", `/${B}/${key}`, bytes, { "x-amz-meta-pad": PAD });
    expect(planted.status, "correct bytes are admitted").to.equal(200);
    const store = storeOn(server.endpoint);
    const hash = `0x${sha256(bytes)}`;
    try {
      expect(await outcome(store.get(hash)), "the verifier's read").to.equal("done");
      expect(await outcome(store.has(hash)), "the existence check").to.equal("done");
      expect(await outcome(store.put(new Uint8Array(bytes))), "the maker's put").to.equal("done");
    } finally {
      store.close();
    }
    const behind = await send(server.upstream, "HEAD", `/${B}/${key}`);
    expect(extras(behind.headers), "stored with the object").to.deep.equal([]);
  });

  it("encoding, type, expiry, storage class, redirect, disposition, caching: none reaches the object", async function () {
    const bytes = fresh();
    const key = `p/${sha256(bytes)}.blob`;
    const planted = await send(server.endpoint, "PUT", `/${B}/${key}`, bytes, {
      "content-encoding": "gzip",
      "content-type": "t".repeat(2000),
      expires: "Thu, 01 Jan 1970 00:00:00 GMT",
      "x-amz-storage-class": "GLACIER",
      "x-amz-website-redirect-location": "/elsewhere",
      "content-disposition": "attachment",
      "cache-control": "no-store",
      "content-language": "xx",
      "x-amz-meta-a": "b",
    });
    expect(planted.status).to.equal(200);
    const behind = await send(server.upstream, "HEAD", `/${B}/${key}`);
    expect(extras(behind.headers), "stored with the object").to.deep.equal([]);
    expect(behind.headers["content-type"]).to.equal("application/octet-stream");
  });

  it("metadata given when a multipart upload is created does not reach the completed object either", async function () {
    const bytes = fresh();
    const Key = `p/${sha256(bytes)}.blob`;
    const client = new S3Client({
      region: "us-east-1",
      endpoint: server.endpoint,
      forcePathStyle: true,
      credentials: S3RVER_CREDENTIALS,
    });
    try {
      const up = await client.send(
        new CreateMultipartUploadCommand({
          Bucket: B,
          Key,
          Metadata: { pad: "m".repeat(8_000) },
          ContentEncoding: "gzip",
          StorageClass: "GLACIER",
        }),
      );
      const part = await client.send(
        new UploadPartCommand({ Bucket: B, Key, UploadId: up.UploadId, PartNumber: 1, Body: bytes }),
      );
      await client.send(
        new CompleteMultipartUploadCommand({
          Bucket: B,
          Key,
          UploadId: up.UploadId,
          MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] },
        }),
      );
    } finally {
      client.destroy();
    }
    const behind = await send(server.upstream, "HEAD", `/${B}/${Key}`);
    expect(behind.status).to.equal(200);
    expect(extras(behind.headers), "stored with the object").to.deep.equal([]);
  });

  it("an object stored with such a header past the gate (or before it stripped them): read through the gate, and put again on a store without one", async function () {
    const bytes = fresh();
    const key = `q/${sha256(bytes)}.blob`;
    const hash = `0x${sha256(bytes)}`;
    // s3rver itself, as a store the operator runs without the gate (or the objects stored before it stripped).
    expect((await send(server.upstream, "PUT", `/${B}/${key}`, bytes, { "x-amz-meta-pad": PAD })).status).to.equal(200);

    const gated = storeOn(server.endpoint, "q");
    const ungated = storeOn(server.upstream, "q");
    try {
      expect(await outcome(gated.get(hash)), "read through the gate").to.equal("done");
      const err = await ungated.get(hash).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err, "without the gate: the blob's own fault, not an outage").to.be.instanceOf(UnreadableBlobError);
      expect(err).to.not.be.instanceOf(StoreUnavailableError);
      expect(await outcome(ungated.put(new Uint8Array(bytes))), "the maker puts it again").to.equal("done");
      expect(Buffer.from(await ungated.get(hash)).equals(bytes), "and every client reads it").to.equal(true);
    } finally {
      gated.close();
      ungated.close();
    }
  });

  it("through the gate, a write of the right bytes over such an object rewrites it clean (it is not taken as held)", async function () {
    const bytes = fresh();
    const key = `r/${sha256(bytes)}.blob`;
    expect((await send(server.upstream, "PUT", `/${B}/${key}`, bytes, { "x-amz-meta-pad": PAD })).status).to.equal(200);
    expect((await send(server.endpoint, "PUT", `/${B}/${key}`, bytes)).status).to.equal(200);
    expect(extras((await send(server.upstream, "HEAD", `/${B}/${key}`)).headers)).to.deep.equal([]);
  });
});
