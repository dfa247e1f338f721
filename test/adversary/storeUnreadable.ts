/**
 * The reporter controlling the "outage" of its own blob (THREATS.md, store writers): a directory, a FIFO or an
 * oversized body under the reported name made every verifier abstain (a store outage is never a refusal), so the
 * checkpoint lapsed after an hour unrefused and the holder reported again; a FIFO pinned the threadpool of every
 * reader. Now what is under the name is an answer about the content: `blob-unreadable`, refused after the same grace as
 * a missing blob (test/verifier/runner.ts), found without reading a body past the template's bound. Real file store,
 * real embedded S3 server (s3rver), real replays.
 */
import { expect } from "chai";
import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, rm, unlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Report } from "../../verifier/checks.ts";
import {
  BlobStore,
  FsBackend,
  loadTemplate,
  S3Backend,
  UnreadableBlobError,
  type CheckpointStore,
} from "../../workloads/index.ts";
import { S3RVER_CREDENTIALS, startEmbeddedS3, type EmbeddedS3 } from "../../workloads/store/embedded.ts";
import { useScratch } from "../helpers/scratch.ts";
import { checkerFor, firstJob, Provider, seedOf } from "../verifier/helpers.ts";

describe("adversary: a reporter cannot turn its own blob into a store outage", function () {
  this.timeout(60_000);
  const template = loadTemplate("blobs-tiny");
  const scratch = useScratch("gpuchain-adversary-unreadable-", template);
  const job = firstJob(template, seedOf(1960));

  /** An honest checkpoint at step 20 in `store`, and the verifier's verdict on its report. */
  async function reported(store: CheckpointStore) {
    const provider = new Provider(scratch.trainer, store as BlobStore);
    const { report } = await provider.produce(job, 20, "honest");
    const verify = (r: Report = report) => checkerFor(scratch.trainer, store)(job, r, seedOf(1));
    return { report, verify };
  }

  /** A fresh file store in the scratch folder, and the path its backend keeps `hash` at. */
  async function fileStore(name: string) {
    const backend = new FsBackend(join(scratch.dir, name));
    return { store: new BlobStore(backend), pathOf: (hash: string) => backend.path(hash.slice(2)) };
  }

  it("control: the honest checkpoint is accepted", async function () {
    const { store } = await fileStore("control");
    const { verify } = await reported(store);
    expect((await verify()).accept).to.equal(true);
  });

  it("a directory under the reported name is refused as blob-unreadable (was: every verifier abstained)", async function () {
    const { store, pathOf } = await fileStore("dir");
    const { report, verify } = await reported(store);
    await unlink(pathOf(report.hash));
    await mkdir(pathOf(report.hash));
    const v = await verify();
    expect(v.codes).to.deep.equal(["blob-unreadable"]);
  });

  it("a FIFO under the reported name is refused at once, without blocking the reader (was: a hung read)", async function () {
    const { store, pathOf } = await fileStore("fifo");
    const { report, verify } = await reported(store);
    await unlink(pathOf(report.hash));
    execFileSync("mkfifo", [pathOf(report.hash)]);
    const t0 = performance.now();
    const v = await verify();
    expect(v.codes).to.deep.equal(["blob-unreadable"]);
    expect(performance.now() - t0, "ms to decide").to.be.below(5_000);
  });

  it("a FIFO in place of a boundary state is refused too (the replay reads it)", async function () {
    const { store, pathOf } = await fileStore("fifo-state");
    const provider = new Provider(scratch.trainer, store);
    const { report, upload } = await provider.produce(job, 20, "honest");
    const c = upload!.checkpoint;
    // m = 2 at 20 steps: every pool segment starts at a stored state; replace them all.
    for (const h of upload!.stateHashes!) {
      await unlink(pathOf(h));
      execFileSync("mkfifo", [pathOf(h)]);
    }
    const v = await checkerFor(scratch.trainer, store)(job, report, seedOf(2));
    expect(v.accept).to.equal(false);
    // One code per unreadable state the check reads (all of them, or one sampled segment's): the same reason.
    expect([...new Set(v.codes)], `segments of ${c.segmentSteps}`).to.deep.equal(["blob-unreadable"]);
  });

  describe("on S3", function () {
    let server: EmbeddedS3;
    let root: string;
    before(async () => {
      root = await mkdtemp(join(tmpdir(), "gpuchain-adversary-unreadable-s3-"));
      server = await startEmbeddedS3({ dir: root });
    });
    after(async () => {
      await server?.close();
      await rm(root, { recursive: true, force: true });
    });

    it("an oversized body under the reported name is refused by its announced length, not downloaded", async function () {
      const backend = new S3Backend(
        { bucket: server.bucket, prefix: "oversized" },
        { region: "us-east-1", credentials: S3RVER_CREDENTIALS, endpoint: server.endpoint },
      );
      const store = new BlobStore(backend);
      const { report, verify } = await reported(store);
      expect((await verify()).accept, "control on S3").to.equal(true);
      // 32 MiB of zeros replaces the honest bytes: larger than any checkpoint of 20 blobs-tiny steps. Through the
      // content gate that write is refused (test/adversary/storeGate.ts); a store without one (any S3 the
      // operator runs ungated) or its own host writes past it: s3rver itself.
      const past = new S3Backend(
        { bucket: server.bucket, prefix: "oversized" },
        { region: "us-east-1", credentials: S3RVER_CREDENTIALS, endpoint: server.upstream },
      );
      await past.write(report.hash.slice(2), new Uint8Array(32 * 1024 * 1024));
      past.close();
      const v = await verify();
      expect(v.codes).to.deep.equal(["blob-unreadable"]);
      let err: unknown;
      try {
        await backend.read(report.hash.slice(2), 1024);
      } catch (e) {
        err = e;
      }
      expect(err).to.be.instanceOf(UnreadableBlobError);
      backend.close?.();
    });
  });
});
