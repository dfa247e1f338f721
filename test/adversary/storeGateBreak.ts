/**
 * Attacks on the content gate (workloads/store/gate.ts) by someone who has read it and the s3rver behind it: raw
 * S3 requests (signed with the store's public key pair) whose meaning differs between the gate and s3rver, and
 * orderings the gate did not expect. Each test asserts that the attack fails: the honest blob's bytes, read from
 * s3rver itself, are still the honest ones, or an honest write still goes through. The attacks that worked
 * against the gate as first written are named "(found)"; they fail before its fix and pass after.
 */
import { SignatureV4 } from "@smithy/signature-v4";
import { expect } from "chai";
import { createHash, createHmac, randomBytes } from "node:crypto";
import { mkdtemp, readdir, rm, stat } from "node:fs/promises";
import { request } from "node:http";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BlobStore, S3Backend } from "../../workloads/index.ts";
import { S3RVER_CREDENTIALS, startEmbeddedS3, type EmbeddedS3 } from "../../workloads/store/embedded.ts";
import { startContentGate } from "../../workloads/store/gate.ts";

const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");
const md5 = (b: Uint8Array) => createHash("md5").update(b).digest("hex");

/** The hash SignatureV4 wants, from node:crypto. */
type Data = string | ArrayBuffer | ArrayBufferView;
const bytesOf = (d: Data) =>
  typeof d === "string"
    ? d
    : ArrayBuffer.isView(d)
      ? Buffer.from(d.buffer, d.byteOffset, d.byteLength)
      : Buffer.from(d);
class Sha256 {
  private h;
  constructor(secret?: Data) {
    this.h = secret ? createHmac("sha256", bytesOf(secret)) : createHash("sha256");
  }
  update(d: Data) {
    this.h.update(bytesOf(d));
  }
  digest() {
    return Promise.resolve(new Uint8Array(this.h.digest()));
  }
}
const signer = new SignatureV4({ credentials: S3RVER_CREDENTIALS, region: "us-east-1", service: "s3", sha256: Sha256 });

type Answer = { status: number; headers: Record<string, unknown>; body: Buffer };

/** Splits `path?query` the way a signer wants it (repeated names as arrays). */
function queryOf(search: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of new URLSearchParams(search)) {
    const had = out[k];
    out[k] = had === undefined ? v : Array.isArray(had) ? [...had, v] : [had, v];
  }
  return out;
}

/** One signed request, sent with exactly the request line `target` (nothing normalised on the way). */
async function send(
  endpoint: string,
  method: string,
  target: string,
  body?: Uint8Array | string,
  extra: Record<string, string> = {},
  timeoutMs = 10_000,
): Promise<Answer> {
  const u = new URL(endpoint);
  const q = target.indexOf("?");
  const bytes = body === undefined ? undefined : Buffer.from(body);
  const signed = await signer.sign({
    method,
    protocol: "http:",
    hostname: u.hostname,
    port: Number(u.port),
    path: q < 0 ? target : target.slice(0, q),
    query: q < 0 ? {} : queryOf(target.slice(q + 1)),
    headers: {
      host: u.host,
      "x-amz-content-sha256": bytes ? sha256(bytes) : sha256(Buffer.alloc(0)),
      ...(bytes ? { "content-length": String(bytes.byteLength) } : {}),
      ...extra,
    },
    body: bytes,
  });
  return new Promise((resolve, reject) => {
    const r = request({ host: u.hostname, port: u.port, method, path: target, headers: signed.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on("error", reject);
    });
    r.on("error", reject);
    r.setTimeout(timeoutMs, () => r.destroy(new Error(`no whole answer within ${timeoutMs} ms`)));
    r.end(bytes);
  });
}

describe("adversary: breaking the store's content gate (requests the gate and s3rver read differently)", function () {
  this.timeout(20_000);
  let dir = "";
  let server: EmbeddedS3;
  let n = 0;
  const B = "gpuchain";

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "gpuchain-gatebreak-"));
    server = await startEmbeddedS3({ dir });
  });
  after(async () => {
    await server?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const gate = (method: string, target: string, body?: Uint8Array | string, extra?: Record<string, string>) =>
    send(server.endpoint, method, target, body, extra);
  /** What s3rver itself holds under `key` (past the gate). */
  /** Bytes as their length and hash (a failed comparison of whole buffers prints megabytes). */
  const summary = (b: Buffer | null) => (b === null ? "missing" : `${b.byteLength} bytes, sha256 ${sha256(b)}`);
  const landed = async (key: string) => {
    const a = await send(server.upstream, "GET", `/${B}/${key}`);
    return a.status === 200 ? a.body : null;
  };
  /**
   * What `key` holds once writes in flight are done: s3rver writes an object in place, so a read during a write the
   * gate is still passing on sees part of it (on a loaded machine for longer than any fixed pause). Polls for up to
   * 10 s until the bytes are `expected`; a blob still other after that was kept so.
   */
  const settled = async (key: string, expected: Buffer) => {
    let got = await landed(key);
    for (let i = 0; i < 50 && got !== null && summary(got) !== summary(expected); i++) {
      await new Promise((r) => setTimeout(r, 200));
      got = await landed(key);
    }
    return got;
  };
  /** A fresh honest blob, written through the gate: its bytes and key. */
  const honestBlob = async (size = 64) => {
    const bytes = Buffer.concat([Buffer.from(`honest ${n++} `), randomBytes(size)]);
    const key = `p/${sha256(bytes)}.blob`;
    const a = await gate("PUT", `/${B}/${key}?x-id=PutObject`, bytes);
    expect(a.status, a.body.toString()).to.equal(200);
    return {
      bytes,
      key,
      intact: async () => expect(summary(await landed(key)), `${key} intact`).to.equal(summary(bytes)),
    };
  };
  const createUpload = async (key: string) => {
    const a = await gate("POST", `/${B}/${key}?uploads`);
    expect(a.status, a.body.toString()).to.equal(200);
    return /<UploadId>([^<]+)<\/UploadId>/.exec(a.body.toString())![1];
  };
  const completeXml = (parts: { n: number; etag: string }[]) =>
    `<CompleteMultipartUpload>${parts.map((p) => `<Part><PartNumber>${p.n}</PartNumber><ETag>"${p.etag}"</ETag></Part>`).join("")}</CompleteMultipartUpload>`;

  it("(found) more than 1000 query parameters: s3rver reads only the first 1000 and takes an upload part for a plain PUT", async function () {
    const honest = await honestBlob();
    const uploadId = await createUpload(honest.key);
    const padding = Array.from({ length: 1000 }, () => "x-id=PutObject").join("&");
    const a = await gate("PUT", `/${B}/${honest.key}?${padding}&uploadId=${uploadId}&partNumber=1`, "other bytes");
    await honest.intact();
    expect(a.status, a.body.toString()).to.be.within(400, 499);
  });

  it("(found) a completion names another blob than the upload was created for: s3rver writes the upload's own key", async function () {
    const honest = await honestBlob();
    const other = Buffer.from(`the attacker's bytes ${n++}`);
    const uploadId = await createUpload(honest.key);
    const part = await gate("PUT", `/${B}/${honest.key}?partNumber=1&uploadId=${uploadId}`, other);
    expect(part.status).to.equal(200);
    const a = await gate(
      "POST",
      `/${B}/p/${sha256(other)}.blob?uploadId=${uploadId}`,
      completeXml([{ n: 1, etag: md5(other) }]),
    );
    await honest.intact();
    expect(a.status, a.body.toString()).to.be.within(400, 499);
  });

  it("(found) parts listed out of order: the gate hashed them as listed, s3rver assembles them by number", async function () {
    const honest = await honestBlob(200);
    const [head, tail] = [honest.bytes.subarray(0, 100), honest.bytes.subarray(100)];
    const uploadId = await createUpload(honest.key);
    for (const [partNumber, bytes] of [
      [1, tail],
      [2, head],
    ] as const)
      expect(
        (await gate("PUT", `/${B}/${honest.key}?partNumber=${partNumber}&uploadId=${uploadId}`, bytes)).status,
      ).to.equal(200);
    const a = await gate(
      "POST",
      `/${B}/${honest.key}?uploadId=${uploadId}`,
      completeXml([
        { n: 2, etag: md5(head) },
        { n: 1, etag: md5(tail) },
      ]),
    );
    await honest.intact();
    expect(a.status, a.body.toString()).to.be.within(400, 499);
  });

  it("(found) a part hidden from s3rver in an XML comment: the gate's regex reads it, s3rver's parser does not", async function () {
    const honest = await honestBlob();
    const other = Buffer.from("garbage that s3rver assembles");
    const uploadId = await createUpload(honest.key);
    for (const [partNumber, bytes] of [
      [1, honest.bytes],
      [2, other],
    ] as const)
      expect(
        (await gate("PUT", `/${B}/${honest.key}?partNumber=${partNumber}&uploadId=${uploadId}`, bytes)).status,
      ).to.equal(200);
    const xml = `<CompleteMultipartUpload><!--<Part><PartNumber>1</PartNumber><ETag>"${md5(honest.bytes)}"</ETag></Part>--><Part kind="hidden from the regex"><PartNumber>2</PartNumber><ETag>"${md5(other)}"</ETag></Part></CompleteMultipartUpload>`;
    const a = await gate("POST", `/${B}/${honest.key}?uploadId=${uploadId}`, xml);
    // The gate may complete the upload (with the parts it checked) or refuse it: either way the bytes are honest.
    await honest.intact();
    expect(a.status, a.body.toString()).to.not.equal(500);
  });

  it("(found) a part for an upload the gate never saw created: spooled and passed on (s3rver makes the upload's folder)", async function () {
    const other = Buffer.from("a part of nothing");
    const a = await gate("PUT", `/${B}/p/${sha256(other)}.blob?partNumber=1&uploadId=${"f".repeat(32)}`, other);
    expect(a.status, a.body.toString()).to.be.within(400, 499);
  });

  it("(found) the same part sent twice at once: the gate keeps the last copy it got, s3rver the one it finished last", async function () {
    const honest = await honestBlob();
    const uploadId = await createUpload(honest.key);
    const target = `/${B}/${honest.key}?partNumber=1&uploadId=${uploadId}`;
    const big = gate("PUT", target, Buffer.alloc(48 * 1024 * 1024, 1)); // slow to land at s3rver
    // The second send goes once s3rver has begun to write the first (the gate has passed it on by then).
    const partFile = join(dir, B, "._S3rver_uploads", uploadId, "1");
    for (let i = 0; i < 500 && ((await stat(partFile).catch(() => null))?.size ?? 0) === 0; i++)
      await new Promise((r) => setTimeout(r, 2));
    const small = await gate("PUT", target, honest.bytes);
    await big;
    const a = await gate(
      "POST",
      `/${B}/${honest.key}?uploadId=${uploadId}`,
      completeXml([{ n: 1, etag: md5(honest.bytes) }]),
    );
    await honest.intact();
    if (a.status === 200) expect(small.status, "a completion only after the honest part landed").to.equal(200);
  });

  it("(found) a client that hangs up while the gate passes its honest bytes on: s3rver kept a truncated blob", async function () {
    const u = new URL(server.endpoint);
    /** Sends a whole PUT of `bytes` to `key` and hangs up `delayMs` after the last byte left. */
    const hangUp = (key: string, bytes: Buffer, delayMs: number) =>
      new Promise<void>((resolve) => {
        const s = connect(Number(u.port), u.hostname, () => {
          s.write(`PUT /${B}/${key} HTTP/1.1\r\nHost: ${u.host}\r\nContent-Length: ${bytes.byteLength}\r\n\r\n`);
          s.write(bytes, () => setTimeout(() => (s.destroy(), resolve()), delayMs));
        });
        s.on("error", () => resolve());
      });
    const fresh = randomBytes(4 * 1024 * 1024);
    await hangUp(`p/${sha256(fresh)}.blob`, fresh, 0);
    await new Promise((r) => setTimeout(r, 200)); // s3rver settles
    const got = await settled(`p/${sha256(fresh)}.blob`, fresh);
    if (got !== null) expect(summary(got), "a first write cut off").to.equal(summary(fresh));

    const honest = await honestBlob(4 * 1024 * 1024);
    for (const delayMs of [0, 2, 5, 10, 20]) {
      await hangUp(honest.key, honest.bytes, delayMs);
      await new Promise((r) => setTimeout(r, 100));
      expect(summary(await settled(honest.key, honest.bytes)), `${honest.key} intact`).to.equal(summary(honest.bytes));
    }
  });

  it("(found) a key with a folder named like s3rver's own file for a blob not yet written: the honest write still lands", async function () {
    const honest = Buffer.from(`a checkpoint the attacker can foresee (it replays deterministic work) ${n++}`);
    const other = Buffer.from(`the attacker's ${n++}`);
    const squat = await gate("PUT", `/${B}/p/${sha256(honest)}.blob._S3rver_object/${sha256(other)}.blob`, other);
    const put = await gate("PUT", `/${B}/p/${sha256(honest)}.blob`, honest);
    expect(put.status, put.body.toString()).to.equal(200);
    expect(summary(await landed(`p/${sha256(honest)}.blob`))).to.equal(summary(honest));
    expect(squat.status, "the folder squat").to.be.within(400, 499);
  });

  it("(found) part number 01: part 1 to the gate, a file named 01 to s3rver, whose completion reads the file named 1", async function () {
    const honest = await honestBlob();
    const other = Buffer.from("what s3rver assembles");
    const uploadId = await createUpload(honest.key);
    await gate("PUT", `/${B}/${honest.key}?partNumber=1&uploadId=${uploadId}`, other);
    await gate("PUT", `/${B}/${honest.key}?partNumber=01&uploadId=${uploadId}`, honest.bytes);
    const a = await gate(
      "POST",
      `/${B}/${honest.key}?uploadId=${uploadId}`,
      completeXml([{ n: 1, etag: md5(honest.bytes) }]),
    );
    await honest.intact();
    expect(a.status, a.body.toString()).to.be.within(400, 499);
  });

  it("(found) an encoded ../ in the key: s3rver joins it into a path out of its folder", async function () {
    const other = Buffer.from(`written out of the store ${n++}`);
    const outside = `gatebreak-${randomBytes(6).toString("hex")}`;
    const a = await gate("PUT", `/${B}/x%2F..%2F..%2F..%2F${outside}%2F${sha256(other)}.blob`, other);
    const escaped = await readdir(join(dir, "..", outside)).then(
      () => true,
      () => false,
    );
    await rm(join(dir, "..", outside), { recursive: true, force: true });
    expect(escaped, "a folder made next to the store's").to.equal(false);
    expect(a.status).to.be.within(400, 499);
  });

  it("(found) a key whose folders s3rver can make but whose file it cannot open (path over 4096): its open error went uncaught", async function () {
    const other = Buffer.from(`a blob under a very deep key ${n++}`);
    const depth = 4000 - join(dir, B).length;
    const folders = Array.from({ length: Math.ceil(depth / 201) }, (_, i) => `${i}`.padEnd(200, "d")).join("/");
    const a = await gate("PUT", `/${B}/${folders}/${sha256(other)}.blob`, other);
    const honest = await honestBlob(); // the store (gate and s3rver, one process) is still up and writes
    await honest.intact();
    expect(a.status, "S3's own bound on a key: 1024 bytes").to.be.within(400, 499);
  });

  it("(found) writes that never send their last byte: the gate held each in memory without bound (now SlowDown past a bound, reads go on)", async function () {
    const behind = await startEmbeddedS3({ dir: join(dir, "behind"), gate: false });
    const small = await startContentGate({ upstream: behind.endpoint, address: "127.0.0.1", maxHeldBytes: 3 << 20 });
    const u = new URL(small.endpoint);
    const honest = Buffer.from(`an honest blob ${n++}`);
    const key = `p/${sha256(honest)}.blob`;
    expect((await send(small.endpoint, "PUT", `/${B}/${key}`, honest)).status).to.equal(200);
    /** A PUT announcing 1.2 MB that sends 1 MiB and waits: its answer, or "held" after `ms`. */
    const stalled: ReturnType<typeof request>[] = [];
    const stall = (ms: number) =>
      new Promise<number | "held">((resolve) => {
        const r = request(
          {
            host: u.hostname,
            port: u.port,
            method: "PUT",
            path: `/${B}/p/${"0".repeat(64)}.blob`,
            headers: { "content-length": 1_200_000 },
          },
          (a) => (a.resume(), resolve(a.statusCode ?? 0)),
        );
        r.on("error", () => resolve(0));
        r.write(Buffer.alloc(1 << 20));
        stalled.push(r);
        setTimeout(() => resolve("held"), ms);
      });
    try {
      expect(await stall(100)).to.equal("held");
      expect(await stall(100)).to.equal("held");
      expect(await stall(1000), "a third write past the bound").to.equal(503);
      const read = await send(small.endpoint, "GET", `/${B}/${key}`);
      expect(summary(read.body), "a read meanwhile").to.equal(summary(honest));
      for (const r of stalled) r.destroy();
      await new Promise((r) => setTimeout(r, 100));
      const other = Buffer.from(`another honest blob ${n++}`);
      expect((await send(small.endpoint, "PUT", `/${B}/p/${sha256(other)}.blob`, other)).status).to.equal(200);
    } finally {
      for (const r of stalled) r.destroy();
      await small.close();
      await behind.close();
    }
  });

  it("(found) the honest bytes rewritten again and again while they are read: s3rver truncates before each rewrite", async function () {
    const honest = await honestBlob(2 * 1024 * 1024);
    let stop = false;
    let rewrites = 0;
    const flood = (async () => {
      while (!stop) {
        await gate("PUT", `/${B}/${honest.key}`, honest.bytes).catch(() => null);
        rewrites++;
      }
    })();
    const bad: string[] = [];
    const until = Date.now() + 1000;
    let reads = 0;
    while (Date.now() < until) {
      const got = await send(server.endpoint, "GET", `/${B}/${honest.key}`, undefined, {}, 500).then(
        (a) => summary(a.body),
        (e: Error) => e.message,
      );
      reads++;
      if (got !== summary(honest.bytes)) bad.push(got);
    }
    stop = true;
    await flood;
    expect(rewrites, "the attacker's rewrites").to.be.above(3);
    expect(bad, `${bad.length} of ${reads} reads`).to.deep.equal([]);
  });

  it("a blob damaged behind the gate is still repaired by an honest put (bytes held intact are not rewritten, others are)", async function () {
    const honest = await honestBlob();
    expect((await send(server.upstream, "PUT", `/${B}/${honest.key}`, "damaged past the gate")).status).to.equal(200);
    expect((await gate("PUT", `/${B}/${honest.key}`, honest.bytes)).status).to.equal(200);
    await honest.intact();
  });

  it("a slowloris (300 connections sending headers a byte at a time) pins nothing: an honest put and read go through", async function () {
    const u = new URL(server.endpoint);
    const sockets = Array.from({ length: 300 }, () => {
      const s = connect(Number(u.port), u.hostname, () => s.write("PUT /gpuchain/p/"));
      s.on("error", () => undefined);
      return s;
    });
    const drip = setInterval(() => sockets.forEach((s) => s.writable && s.write("a")), 50);
    try {
      await new Promise((r) => setTimeout(r, 200));
      const started = Date.now();
      const honest = await honestBlob();
      await honest.intact();
      expect(Date.now() - started, "ms for an honest put and read").to.be.below(2000);
    } finally {
      clearInterval(drip);
      sockets.forEach((s) => s.destroy());
    }
  });

  it("metadata a writer sets with the honest bytes (encoding, storage class, redirect, range): the honest reader still gets them", async function () {
    const honest = Buffer.from(`a checkpoint the attacker foresees ${n++}`);
    const key = `p/${sha256(honest)}.blob`;
    const planted = await gate("PUT", `/${B}/${key}`, honest, {
      "content-encoding": "gzip",
      "content-type": "application/x-gzip",
      "x-amz-storage-class": "GLACIER",
      "x-amz-website-redirect-location": "/elsewhere",
      "content-range": "bytes 0-1/2",
      "cache-control": "no-store",
    });
    const store = new BlobStore(
      new S3Backend(
        { bucket: B, prefix: "p" },
        { region: "us-east-1", credentials: S3RVER_CREDENTIALS, endpoint: server.endpoint },
      ),
    );
    try {
      expect(await store.put(new Uint8Array(honest))).to.equal(`0x${sha256(honest)}`);
      expect(Buffer.from(await store.get(`0x${sha256(honest)}`)).equals(honest), "read back").to.equal(true);
    } finally {
      store.close();
    }
    expect(planted.status).to.be.oneOf([200, 400, 403]);
  });

  it("what failed: method, header, query and path tricks leave the honest blob as it is", async function () {
    const honest = await honestBlob();
    const other = Buffer.from("other bytes");
    const name = sha256(honest.bytes);
    const attempts: [string, string, (Uint8Array | string)?, Record<string, string>?][] = [
      ["DELETE", `/${B}/${honest.key}`],
      ["GET", `/${B}/${honest.key}`, undefined, { "x-http-method-override": "DELETE" }],
      ["POST", `/${B}/${honest.key}`, undefined, { "x-http-method-override": "DELETE" }],
      ["POST", `/${B}?delete`, `<Delete><Object><Key>${honest.key}</Key></Object></Delete>`],
      ["PUT", `/${B}/${honest.key}`, other],
      ["PUT", `/${B}/${honest.key}?x-amz-copy-source=${B}/p/x.blob`, honest.bytes],
      ["PUT", `/${B}/${honest.key}?X-Amz-Copy-Source=${B}/p/x.blob`, honest.bytes],
      ["PUT", `/${B}/${honest.key}?tagging`, "<Tagging><TagSet></TagSet></Tagging>"],
      ["PUT", `/${B}/${honest.key}?acl`, ""],
      ["PUT", `/${B}/p/${name.toUpperCase()}.blob`, other],
      ["PUT", `/${B}/${honest.key}%00`, other],
      ["PUT", `/${B}/${honest.key}#/../${sha256(other)}.blob`, other],
      ["PUT", `/${B}/p/${sha256(other)}.blob/..%2F..%2F${honest.key}`, other],
      ["PUT", `/${B}/p\\${name}.blob\\..\\${sha256(other)}.blob`, other],
      ["PUT", `/${B}/p/%2e%2e/${honest.key}`, other],
      ["PUT", `//${B}/${honest.key}`, other],
      ["PUT", `/${B}/${honest.key}?x-id=PutObject&x-id=PutObject`, other],
      [
        "PUT",
        `/${B}/${honest.key}`,
        other,
        { "content-encoding": "aws-chunked", "x-amz-decoded-content-length": "11" },
      ],
      ["PUT", `/${B}/${honest.key}?uploadId=${"a".repeat(32)}&uploadId=${"b".repeat(32)}&partNumber=1`, other],
      ["POST", `/${B}`, other, { "content-type": "multipart/form-data; boundary=x" }],
      ["POST", `/${B}/${honest.key}`, other],
      ["PUT", `/${B}?website`, "<WebsiteConfiguration/>"],
      ["PUT", `/${B}?cors`, "<CORSConfiguration/>"],
      ["GET", `/${B}/${honest.key}?response-content-length=1`],
      ["OPTIONS", `/${B}/${honest.key}`],
      ["PUT", `/${honest.key}`, other, { host: `${B}.localhost` }],
      ["PUT", `/${B}/${honest.key}`, other, { expect: "100-continue" }],
    ];
    for (const [method, target, body, extra] of attempts) {
      await gate(method, target, body, extra).catch(() => null);
      await honest.intact();
    }
    const again = await gate("PUT", `/${B}/${honest.key}`, honest.bytes);
    expect(again.status).to.equal(200);
  });
});
