/**
 * One suite, run unchanged against both store backends: the file system and S3 (a real s3rver on a free port,
 * reached through a fault-injecting HTTP proxy). Content addressing, verified reads, squatting repair, large
 * (multipart) blobs, and the line between "not there" / "other bytes there" (answers about the content) and "the
 * store could not answer" (StoreUnavailableError after bounded retries, never NotFound or a mismatch).
 */
import { expect } from "chai";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  BlobStore,
  blobHash,
  FsBackend,
  HashMismatchError,
  NotFoundError,
  parseStoreUrl,
  S3Backend,
  StoreUnavailableError,
  StoreUrlError,
  WorkloadError,
  type BlobBackend,
  type StoreEvent,
} from "../../workloads/index.ts";
import { PART_BYTES } from "../../workloads/store/s3.ts";
import { S3RVER_CREDENTIALS, startEmbeddedS3, type EmbeddedS3 } from "../../workloads/store/embedded.ts";
import { FaultyBackend, startFaultProxy, type FaultProxy } from "./storeFaults.ts";

/** A fault as the test names it; each backend injects it the way that backend really fails. */
type Fault = "5xx" | "timeout" | "truncate" | "emfile";

type Fixture = {
  store: BlobStore;
  /** The same objects, written without any check: how a squatter with write access plants bytes. */
  raw: BlobBackend;
  /** Writes past any gate: the store's own host (for S3, s3rver itself behind the content gate). */
  past: BlobBackend;
  inject(f: Fault, times?: number): void;
  hits(): number;
  events: StoreEvent[];
};

type Backend = {
  name: string;
  setup(): Promise<void>;
  fresh(): Promise<Fixture>;
  teardown(): Promise<void>;
};

// Short, so injected hangs fail fast; a healthy op on a busy machine still fits easily.
const RETRY = { attempts: 4, baseDelayMs: 5, maxDelayMs: 20, opTimeoutMs: 1_000 };

function fixture(
  real: BlobBackend,
  raw: BlobBackend,
  inject: (f: Fault, n: number) => void,
  hits: () => number,
  past = raw,
): Fixture {
  const events: StoreEvent[] = [];
  return {
    store: new BlobStore(real, { retry: RETRY, onEvent: (e) => events.push(e) }),
    raw,
    past,
    events,
    hits,
    inject: (f, n = 1) => inject(f, n),
  };
}

function fileBackend(): Backend {
  let root = "";
  return {
    name: "file",
    setup: async () => void (root = await mkdtemp(join(tmpdir(), "gpuchain-store-suite-"))),
    fresh: async () => {
      const real = new FsBackend(join(root, randomBytes(4).toString("hex")));
      const faulty = new FaultyBackend(real);
      const asBackend = (f: Fault) => (f === "5xx" ? "eio" : f === "timeout" ? "hang" : f);
      return fixture(
        faulty,
        real,
        (f, n) => faulty.inject(asBackend(f), n),
        () => faulty.hits,
      );
    },
    teardown: () => rm(root, { recursive: true, force: true }),
  };
}

function s3Backend(): Backend {
  let root = "";
  let server: EmbeddedS3;
  let proxy: FaultProxy;
  const open: BlobBackend[] = [];
  return {
    name: "s3",
    setup: async () => {
      root = await mkdtemp(join(tmpdir(), "gpuchain-s3-suite-"));
      server = await startEmbeddedS3({ dir: root });
      proxy = await startFaultProxy(server.endpoint);
    },
    fresh: async () => {
      const loc = { bucket: server.bucket, prefix: `t-${randomBytes(4).toString("hex")}` };
      const opts = { region: "us-east-1", credentials: S3RVER_CREDENTIALS, requestTimeoutMs: 400 };
      const viaProxy = new S3Backend(loc, { ...opts, endpoint: proxy.endpoint });
      const direct = new S3Backend(loc, { ...opts, endpoint: server.endpoint, requestTimeoutMs: 30_000 });
      const past = new S3Backend(loc, { ...opts, endpoint: server.upstream, requestTimeoutMs: 30_000 });
      const faulty = new FaultyBackend(viaProxy);
      open.push(viaProxy, direct, past);
      const inject = (f: Fault, n: number) => {
        if (f === "emfile") faulty.inject("emfile", n);
        else proxy.inject(f === "5xx" ? "503" : f === "timeout" ? "hang" : "truncate", n);
      };
      proxy.clear();
      const base = proxy.hits();
      return fixture(faulty, direct, inject, () => proxy.hits() - base + faulty.hits, past);
    },
    teardown: async () => {
      for (const b of open) b.close?.();
      await proxy?.close();
      await server?.close();
      await rm(root, { recursive: true, force: true });
    },
  };
}

const bytesOf = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff);
const same = (a: Uint8Array, b: Uint8Array) => Buffer.from(a).equals(Buffer.from(b));
const nameOf = (hash: string) => hash.slice(2);
async function errorOf(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error("expected a rejection");
}

for (const backend of [fileBackend(), s3Backend()]) {
  describe(`workloads: checkpoint store suite (${backend.name})`, function () {
    let f: Fixture;
    before(() => backend.setup());
    after(() => backend.teardown());
    beforeEach(async () => (f = await backend.fresh()));

    it("stores bytes under their sha256, is idempotent, and says what is and is not there", async function () {
      const bytes = bytesOf(400_000, 1);
      const hash = await f.store.put(bytes);
      expect(hash).to.equal(blobHash(bytes));
      expect(await f.store.put(bytes)).to.equal(hash);
      expect(await f.store.has(hash)).to.equal(true);
      expect(same(await f.store.get(hash), bytes)).to.equal(true);
      const missing = "0x" + "ee".repeat(32);
      expect(await f.store.has(missing)).to.equal(false);
      expect(await errorOf(f.store.get(missing))).to.be.instanceOf(NotFoundError);
      expect(f.events).to.deep.equal([]);
    });

    it("round-trips a blob larger than one multipart part", async function () {
      // Straight to the backend with room for a busy machine: the short timeouts above are for injected hangs.
      const store = new BlobStore(f.raw, { retry: { ...RETRY, opTimeoutMs: 120_000 } });
      const big = bytesOf(PART_BYTES * 2 + 12_345, 7);
      const hash = await store.put(big);
      expect(same(await store.get(hash), big)).to.equal(true);
    });

    it("store squatting: a put over other bytes under its name repairs them and reports it", async function () {
      const honest = bytesOf(50_000, 2);
      const hash = blobHash(honest);
      await f.past.write(nameOf(hash), bytesOf(50_000, 3)); // planted before the honest upload (past any gate)
      expect(await errorOf(f.store.get(hash))).to.be.instanceOf(HashMismatchError);
      expect(await f.store.put(honest)).to.equal(hash);
      expect(same(await f.store.get(hash), honest)).to.equal(true);
      expect(f.events.filter((e) => e.kind === "repaired").map((e) => e.name)).to.deep.equal([nameOf(hash)]);
    });

    it("a read of other bytes under a name is a HashMismatchError after re-reading, never returned", async function () {
      const hash = blobHash(bytesOf(1000, 4));
      await f.past.write(nameOf(hash), bytesOf(1000, 5));
      const err = await errorOf(f.store.get(hash));
      expect(err).to.be.instanceOf(HashMismatchError);
      expect(f.events.filter((e) => e.kind === "retry" && e.op === "verify")).to.have.length(2);
    });

    for (const fault of ["5xx", "timeout", "truncate", "emfile"] as const) {
      it(`recovers from a passing ${fault} on reads and writes (retried with backoff)`, async function () {
        const bytes = bytesOf(300_000, 6);
        if (fault !== "truncate") f.inject(fault, 2); // only reads can be cut off, and a fresh put reads nothing
        const hash = await f.store.put(bytes);
        f.inject(fault, 2);
        expect(same(await f.store.get(hash), bytes)).to.equal(true);
        expect(f.hits()).to.be.at.least(fault === "truncate" ? 2 : 4);
        expect(f.events.some((e) => e.kind === "retry")).to.equal(true);
      });
    }

    for (const fault of ["5xx", "timeout", "emfile"] as const) {
      it(`a lasting ${fault} is StoreUnavailableError on get and has, never NotFound, a mismatch or a false`, async function () {
        const hash = await f.store.put(bytesOf(10_000, 8));
        f.inject(fault, 100);
        const got = await errorOf(f.store.get(hash));
        expect(got).to.be.instanceOf(StoreUnavailableError);
        expect(got).not.to.be.instanceOf(WorkloadError);
        expect(await errorOf(f.store.has(hash))).to.be.instanceOf(StoreUnavailableError);
        expect(await errorOf(f.store.put(bytesOf(10, 9)))).to.be.instanceOf(StoreUnavailableError);
      });
    }
  });
}

describe("workloads: store URLs", function () {
  it("names file and S3 stores; a plain path is a folder", function () {
    expect(parseStoreUrl("file:///tmp/x")).to.deep.equal({ kind: "file", dir: "/tmp/x" });
    expect(parseStoreUrl(".gpuchain/store")).to.deep.equal({ kind: "file", dir: ".gpuchain/store" });
    expect(parseStoreUrl("s3://bucket/a/b/")).to.deep.equal({ kind: "s3", bucket: "bucket", prefix: "a/b" });
    expect(parseStoreUrl("s3://bucket")).to.deep.equal({ kind: "s3", bucket: "bucket", prefix: "" });
  });

  it("refuses unknown schemes and bucketless URLs with a one-line reason", function () {
    expect(() => parseStoreUrl("gs://b/p")).to.throw(StoreUrlError, /unsupported store URL gs:\/\/b\/p/);
    expect(() => parseStoreUrl("s3:///p")).to.throw(StoreUrlError, /names no bucket/);
    expect(() => parseStoreUrl("")).to.throw(StoreUrlError, /must name a store/);
  });
});
