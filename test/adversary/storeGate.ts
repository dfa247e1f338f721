/**
 * Store writers getting honest work refused (THREATS.md, "Anyone with write access to the store"): a writer with the
 * store's credentials who overwrites an honest checkpoint again and again, faster than the agent's repair round,
 * for the whole grace, got it refused (the provider fenced); a writer who deletes a decided checkpoint's blobs
 * made the next report on top of them fail as chain-gap. The embedded store now has one door, the content gate
 * (workloads/store/gate.ts): a write must hash to its name, nothing is deleted or copied. Each attack is first run
 * against the same s3rver without the gate (it works there: the test can fail), then through the gate (it fails,
 * and the honest checkpoint is accepted while the attacker keeps writing). Real s3rver, real AWS SDK, real replays.
 */
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  ListMultipartUploadsCommand,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { expect } from "chai";
import { createHash } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BlobStore, blobHash, loadTemplate, S3Backend } from "../../workloads/index.ts";
import { S3RVER_CREDENTIALS, startEmbeddedS3, type EmbeddedS3 } from "../../workloads/store/embedded.ts";
import { gateDecision, listedParts } from "../../workloads/store/gateRules.ts";
import { useScratch } from "../helpers/scratch.ts";
import { checkerFor, firstJob, Provider, seedOf } from "../verifier/helpers.ts";

const HEX = "ab".repeat(32);

describe("store content gate: the rule (pure)", function () {
  const d = (method: string, url: string, headers: Record<string, unknown> = {}) =>
    gateDecision(method, url, headers).kind;

  it("reads pass; a whole PUT or an upload of a content-named blob is checked; everything else is refused", function () {
    expect(d("GET", `/b/p/${HEX}.blob`)).to.equal("read");
    expect(d("HEAD", `/b/p/${HEX}.blob`)).to.equal("read");
    expect(d("GET", "/b?list-type=2")).to.equal("read");
    expect(gateDecision("GET", "/b?uploads&prefix=p%2F", {})).to.deep.equal({
      kind: "list-uploads",
      bucket: "b",
      prefix: "p/",
    });
    expect(gateDecision("PUT", `/b/p/${HEX}.blob?x-id=PutObject`, {})).to.deep.equal({
      kind: "put",
      name: HEX,
      path: `b/p/${HEX}.blob`,
    });
    expect(d("PUT", `/b/${HEX}.blob`)).to.equal("put");
    expect(d("POST", `/b/p/${HEX}.blob?uploads&x-id=CreateMultipartUpload`)).to.equal("create-upload");
    expect(gateDecision("PUT", `/b/p/${HEX}.blob?partNumber=2&uploadId=abcdef012345`, {})).to.deep.equal({
      kind: "part",
      uploadId: "abcdef012345",
      partNumber: 2,
      path: `b/p/${HEX}.blob`,
    });
    expect(d("POST", `/b/p/${HEX}.blob?uploadId=abcdef012345`)).to.equal("complete");
    expect(d("DELETE", `/b/p/${HEX}.blob?uploadId=abcdef012345`)).to.equal("abort");
    for (const [method, url, headers] of [
      ["DELETE", `/b/p/${HEX}.blob`, {}],
      ["POST", "/b?delete", {}],
      ["PUT", `/b/p/${HEX}.blob`, { "x-amz-copy-source": "/b/p/other.blob" }],
      ["PUT", "/b/p/notes.txt", {}],
      ["PUT", `/b/p/${HEX.toUpperCase()}.blob`, {}],
      ["PUT", `/b/p/${HEX}.blob.tmp`, {}],
      ["PUT", "/b", {}],
      ["PUT", `/b/p/${HEX}.blob?acl`, {}],
      ["PUT", `/b/p/${HEX}.blob?partNumber=0&uploadId=abcdef012345`, {}],
      ["PUT", `/b/p/${HEX}.blob?partNumber=1&uploadId=${"..%2F".repeat(2)}etc`, {}],
      ["GET", "/b/p?uploads", {}],
      ["GET", `/b/p/${HEX}.blob?uploadId=abcdef012345`, {}],
      ["PATCH", `/b/p/${HEX}.blob`, {}],
    ] as const)
      expect(d(method, url, headers), `${method} ${url}`).to.equal("refuse");
  });

  it("reads the parts a completion lists, in its order, with their ETags; a part without one is malformed", function () {
    const e1 = "0".repeat(32);
    const e2 = "F".repeat(32);
    const xml = `<CompleteMultipartUpload><Part><ETag>"${e2}"</ETag><PartNumber>2</PartNumber></Part><Part><PartNumber>1</PartNumber><ETag>&quot;${e1}&quot;</ETag></Part></CompleteMultipartUpload>`;
    expect(listedParts(xml)).to.deep.equal([
      { partNumber: 2, etag: "f".repeat(32) },
      { partNumber: 1, etag: e1 },
    ]);
    expect(listedParts("<CompleteMultipartUpload></CompleteMultipartUpload>")).to.equal(null);
    expect(
      listedParts("<CompleteMultipartUpload><Part><PartNumber>1</PartNumber></Part></CompleteMultipartUpload>"),
    ).to.equal(null);
  });
});

describe("adversary: a store writer cannot get an honest checkpoint refused through the content gate", function () {
  this.timeout(120_000);
  const template = loadTemplate("blobs-tiny");
  const scratch = useScratch("gpuchain-adversary-gate-", template);
  const job = firstJob(template, seedOf(1970));
  const stores: { name: string; gated: boolean; server?: EmbeddedS3; dir?: string }[] = [
    { name: "without the gate (the store before)", gated: false },
    { name: "through the content gate", gated: true },
  ];

  before(async () => {
    for (const s of stores) {
      s.dir = await mkdtemp(join(tmpdir(), "gpuchain-adversary-gate-s3-"));
      s.server = await startEmbeddedS3({ dir: s.dir, gate: s.gated });
    }
  });
  after(async () => {
    for (const s of stores) {
      await s.server?.close();
      if (s.dir) await rm(s.dir, { recursive: true, force: true });
    }
  });

  /** The attacker: anyone with the store's credentials, talking plain S3 to the store's endpoint. */
  const attackerOf = (server: EmbeddedS3) =>
    new S3Client({
      region: "us-east-1",
      endpoint: server.endpoint,
      forcePathStyle: true,
      credentials: S3RVER_CREDENTIALS,
      maxAttempts: 1,
      requestChecksumCalculation: "WHEN_REQUIRED",
    });
  const storeOn = (server: EmbeddedS3, prefix: string) =>
    new BlobStore(
      new S3Backend(
        { bucket: server.bucket, prefix },
        { region: "us-east-1", credentials: S3RVER_CREDENTIALS, endpoint: server.endpoint },
      ),
    );
  /** The attack's outcome: "done" or the S3 error code that refused it. */
  const outcome = (p: Promise<unknown>) =>
    p.then(
      () => "done",
      (e: { Code?: string; name?: string }) => e.Code ?? e.name ?? "error",
    );

  for (const s of stores) {
    describe(s.name, function () {
      const expectAttack = (got: string, refusedAs: string, what: string) =>
        expect(got, what).to.equal(s.gated ? refusedAs : "done");

      it("overwrite, copy over, delete, multipart overwrite: each lands only without the gate", async function () {
        const server = s.server!;
        const prefix = `attacks-${s.gated}`;
        const store = storeOn(server, prefix);
        const honest = new TextEncoder().encode(`an honest checkpoint ${s.name}`);
        const hash = await store.put(honest);
        const key = `${prefix}/${hash.slice(2)}.blob`;
        const other = `${prefix}/${blobHash(new TextEncoder().encode("x")).slice(2)}.blob`;
        const attacker = attackerOf(server);
        const Bucket = server.bucket;
        const intact = async () => Buffer.from(await store.get(hash)).equals(Buffer.from(honest));

        const put = await outcome(attacker.send(new PutObjectCommand({ Bucket, Key: key, Body: "someone else's" })));
        expectAttack(put, "BadDigest", "PutObject of other bytes");
        if (s.gated) expect(await intact(), "after the refused overwrite").to.equal(true);

        await store.put(honest); // the agent's repair (a no-op through the gate)
        await attacker.send(new PutObjectCommand({ Bucket, Key: other, Body: "x" })); // hashes to its name: allowed
        const copy = await outcome(
          attacker.send(new CopyObjectCommand({ Bucket, Key: key, CopySource: `${Bucket}/${other}` })),
        );
        expectAttack(copy, "AccessDenied", "CopyObject over the name");
        if (s.gated) expect(await intact(), "after the refused copy").to.equal(true);

        await store.put(honest);
        const big = Buffer.alloc(5 * 1024 * 1024, 7); // a part must be ≥ 5 MiB unless it is the last
        const up = await attacker.send(new CreateMultipartUploadCommand({ Bucket, Key: key }));
        const parts = [];
        for (const PartNumber of [1, 2]) {
          const r = await attacker.send(
            new UploadPartCommand({ Bucket, Key: key, UploadId: up.UploadId, PartNumber, Body: big }),
          );
          parts.push({ PartNumber, ETag: r.ETag });
        }
        const complete = await outcome(
          attacker.send(
            new CompleteMultipartUploadCommand({
              Bucket,
              Key: key,
              UploadId: up.UploadId,
              MultipartUpload: { Parts: parts },
            }),
          ),
        );
        expectAttack(complete, "BadDigest", "CompleteMultipartUpload of other bytes");
        if (s.gated) {
          expect(await intact(), "after the refused multipart overwrite").to.equal(true);
          // s3rver has no AbortMultipartUpload (MethodNotAllowed); the gate drops its copies and s3rver's parts.
          await outcome(attacker.send(new AbortMultipartUploadCommand({ Bucket, Key: key, UploadId: up.UploadId })));
          const list = await attacker.send(new ListMultipartUploadsCommand({ Bucket }));
          expect(list.Uploads ?? [], "uploads in progress (their ids) are not listed").to.deep.equal([]);
        }

        await store.put(honest);
        const del = await outcome(attacker.send(new DeleteObjectCommand({ Bucket, Key: key })));
        expectAttack(del, "AccessDenied", "DeleteObject");
        const dels = await outcome(
          attacker.send(new DeleteObjectsCommand({ Bucket, Delete: { Objects: [{ Key: key }] } })),
        );
        expectAttack(dels, "AccessDenied", "DeleteObjects");
        expect(await store.has(hash), "the honest blob is still there").to.equal(s.gated);
        if (s.gated) expect(server.gate!.refused).to.include({ BadDigest: 2, AccessDenied: 3 });
        attacker.destroy();
        store.close();
      });

      it("an attacker overwriting the reported checkpoint every 20 ms while it is verified: refused only without the gate", async function () {
        const server = s.server!;
        const store = storeOn(server, `race-${s.gated}`);
        const provider = new Provider(scratch.trainer, store);
        const { report } = await provider.produce(job, 20, "honest");
        const attacker = attackerOf(server);
        const Key = `race-${s.gated}/${report.hash.slice(2)}.blob`;
        let writes = 0;
        let landed = 0;
        let stop = false;
        const flood = (async () => {
          while (!stop) {
            writes++;
            const body = createHash("sha256").update(String(writes)).digest();
            if (
              (await outcome(attacker.send(new PutObjectCommand({ Bucket: server.bucket, Key, Body: body })))) ===
              "done"
            )
              landed++;
            await new Promise((r) => setTimeout(r, 20));
          }
        })();
        await new Promise((r) => setTimeout(r, 100)); // the flood is on before the first read
        const verdict = await checkerFor(scratch.trainer, store)(job, report, seedOf(3));
        stop = true;
        await flood;
        attacker.destroy();
        store.close();
        expect(writes, "attacker's writes").to.be.above(3);
        if (s.gated) {
          expect(landed, "writes that landed").to.equal(0);
          expect(verdict.accept, `codes ${verdict.codes}`).to.equal(true);
        } else {
          expect(landed).to.equal(writes);
          expect(verdict.accept).to.equal(false);
          expect(verdict.codes).to.include("hash-mismatch");
        }
      });
    });
  }
});
