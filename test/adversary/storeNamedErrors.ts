/**
 * An error that names the blob is the blob's fault. On a `file://` store the reporter controls what is under its
 * own name: a self-referencing symlink (ELOOP), a symlink through a file (ENOTDIR), a file the verifier may not
 * open (EACCES) were rethrown as "store unavailable", so every verifier abstained and the report lapsed undecided
 * (3 h measured, no refusal). On S3 the same holds for an object no client can read while the bucket answers for
 * other keys (an archived storage class, customer-key encryption). Now each is `blob-unreadable`, refused after the
 * grace; a store that fails for every name (its folder unreadable, a server answering nothing) stays an outage.
 * Real files, real verifier checks and runner; EACCES from a real process without root (uid nobody) when the test
 * runs as root, where mode 000 blocks no read.
 */
import { GetObjectCommand } from "@aws-sdk/client-s3";
import { expect } from "chai";
import { spawnSync } from "node:child_process";
import { chmod, symlink, unlink, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createLogger } from "../../sdk/run/log.ts";
import { JobStatus as STATUS, type RawJob } from "../../sdk/rules/job.ts";
import type { JobFacts } from "../../verifier/checks.ts";
import type { SignaturePoster } from "../../verifier/collector.ts";
import { DecisionStore } from "../../verifier/decisions.ts";
import { Verifier, type EscrowReader } from "../../verifier/verifier.ts";
import type { SignatureBody } from "../../verifier/work.ts";
import {
  BlobStore,
  FsBackend,
  loadTemplate,
  S3Backend,
  StoreUnavailableError,
  UnreadableBlobError,
} from "../../workloads/index.ts";
import { blame, fsReadFault, s3ReadFault } from "../../workloads/store/readFaults.ts";
import { rawJob } from "../helpers/jobs.ts";
import { useScratch } from "../helpers/scratch.ts";
import { checkerFor, firstJob, hardhatWallet, Provider, seedOf, TEST_MAKER } from "../verifier/helpers.ts";

const asRoot = process.getuid?.() === 0;

async function errorOf(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  return null;
}

describe("store read faults: whose fault a failed read is (pure)", function () {
  it("a file error for one name may be the name's; a missing file is missing; anything else is the store's", function () {
    for (const code of ["ELOOP", "EACCES", "EPERM", "ENOTDIR", "EIO", "EISDIR", "ENXIO"])
      expect(fsReadFault(code), code).to.equal("this-name");
    expect(fsReadFault("ENOENT")).to.equal("missing");
    for (const code of ["EMFILE", "ENOSPC", "ETIMEDOUT", undefined]) expect(fsReadFault(code)).to.equal("store");
  });

  it("an S3 answer no client parses, an archived or encrypted object may be the name's; 5xx and timeouts never", function () {
    const sdk = (name: string, status?: number, code?: string) =>
      Object.assign(new Error(name), { name, code, $metadata: { httpStatusCode: status } });
    expect(s3ReadFault(sdk("Error", undefined, "HPE_HEADER_OVERFLOW"))).to.equal("this-name");
    expect(s3ReadFault(sdk("InvalidObjectState", 403))).to.equal("this-name");
    expect(s3ReadFault(sdk("InvalidRequest", 400))).to.equal("this-name");
    expect(s3ReadFault(sdk("NoSuchKey", 404))).to.equal("missing");
    expect(s3ReadFault(sdk("NoSuchBucket", 404))).to.equal("store");
    for (const [name, status] of [
      ["InternalError", 500],
      ["SlowDown", 503],
      ["RequestTimeout", 408],
      ["TimeoutError", undefined],
    ] as const)
      expect(s3ReadFault(sdk(name, status)), name).to.equal("store");
  });

  it("the name is blamed only while the store answers for another name", function () {
    expect(blame("this-name", true)).to.equal("this-name");
    expect(blame("this-name", false)).to.equal("store");
    expect(blame("store", true)).to.equal("store");
    expect(blame("missing", false)).to.equal("missing");
  });
});

describe("adversary: a reporter cannot make an outage of its own blob with an error that names it", function () {
  this.timeout(120_000);
  const template = loadTemplate("blobs-tiny");
  const scratch = useScratch("gpuchain-adversary-named-", template);
  const job = firstJob(template, seedOf(3501));

  /** An honest checkpoint at step 20 in a fresh file store, and the path its blob has there. */
  async function reported(name: string) {
    const backend = new FsBackend(join(scratch.dir, name));
    const store = new BlobStore(backend, { retry: { attempts: 2, baseDelayMs: 5 } });
    const provider = new Provider(scratch.trainer, store);
    const { report } = await provider.produce(job, 20, "honest");
    const path = backend.path(report.hash.slice(2));
    const verify = () => checkerFor(scratch.trainer, store)(job, report, seedOf(1));
    return { store, backend, report, path, verify };
  }

  /** The verifier's codes, or the error's class when it could not decide (an outage). */
  const codesOf = (v: ReturnType<Awaited<ReturnType<typeof reported>>["verify"]>) =>
    v.then(
      (d) => d.codes,
      (e: Error) => `${e.constructor.name}: ${e.message}`,
    );

  it("a self-referencing symlink (ELOOP) under the reported name is refused as blob-unreadable (was: an outage)", async function () {
    const r = await reported("eloop");
    await unlink(r.path);
    await symlink(r.path, r.path);
    expect(await codesOf(r.verify())).to.deep.equal(["blob-unreadable"]);
  });

  it("a symlink through a file (ENOTDIR) under the reported name is refused as blob-unreadable (was: an outage)", async function () {
    const r = await reported("enotdir");
    await unlink(r.path);
    await writeFile(join(scratch.dir, "a-file"), "x");
    await symlink(join(scratch.dir, "a-file", "inside"), r.path);
    expect(await codesOf(r.verify())).to.deep.equal(["blob-unreadable"]);
  });

  it("the maker can put a blob again over a symlink loop planted under its name", async function () {
    const r = await reported("eloop-repair");
    const bytes = await r.store.get(r.report.hash);
    await unlink(r.path);
    await symlink(r.path, r.path);
    expect(await r.store.put(bytes)).to.equal(r.report.hash);
    expect(await codesOf(r.verify())).to.deep.equal([]);
  });

  it("a store whose folder is a file fails for every name: still an outage, never a refusal", async function () {
    const dir = join(scratch.dir, "folder-is-a-file");
    await writeFile(dir, "not a folder");
    const store = new BlobStore(new FsBackend(dir), { retry: { attempts: 2, baseDelayMs: 5 } });
    const err = await errorOf(store.get("0x" + "ab".repeat(32)));
    expect(err).to.be.instanceOf(StoreUnavailableError);
  });

  /**
   * Reads `hash` from the file store in `dir` in a process that is not root (uid nobody), as a verifier runs;
   * returns the error's class, or "read" when it read the blob.
   */
  async function readAsNobody(dir: string, hash: string): Promise<string> {
    const index = fileURLToPath(new URL("../../workloads/index.ts", import.meta.url));
    const script = join(scratch.dir, "read-as-nobody.ts");
    await writeFile(
      script,
      `import { BlobStore, FsBackend } from ${JSON.stringify(index)};
new BlobStore(new FsBackend(process.argv[2]), { retry: { attempts: 1 } }).get(process.argv[3])
  .then(() => console.log("read"), (e) => console.log(e.constructor.name));`,
    );
    await chmod(script, 0o644);
    const r = spawnSync(process.execPath, ["--import", "tsx", script, dir, hash], {
      cwd: process.cwd(),
      encoding: "utf8",
      timeout: 60_000,
      ...(asRoot ? { uid: 65534, gid: 65534 } : {}),
    });
    return (r.stdout.trim() || r.stderr.trim()).split("\n").pop()!;
  }

  it("a file the verifier may not open (EACCES) under the reported name is unreadable; a folder it may not open is an outage", async function () {
    const r = await reported("eacces");
    // Readable by everyone on the way to the store, as a store's folder is for its verifiers.
    for (const d of [scratch.dir, join(scratch.dir, "eacces")]) await chmod(d, 0o755);
    await chmod(r.path, 0o644);
    expect(await readAsNobody(r.backend.dir, r.report.hash), "control: readable").to.equal("read");
    await chmod(r.path, 0o000);
    expect(await readAsNobody(r.backend.dir, r.report.hash), "the blob's file closed").to.equal("UnreadableBlobError");
    await chmod(r.path, 0o644);
    await chmod(r.backend.dir, 0o700);
    expect(await readAsNobody(r.backend.dir, r.report.hash), "the store's folder closed").to.equal(
      "StoreUnavailableError",
    );
    await chmod(r.backend.dir, 0o755);
  });

  describe("in the verifier's runner: waited out for the grace, then refused (was: abstaining until the report lapsed)", function () {
    class FakeChain implements EscrowReader {
      jobs: { status: number; job: RawJob }[] = [];
      async jobCount() {
        return BigInt(this.jobs.length);
      }
      async jobOf(id: bigint) {
        return this.jobs[Number(id) - 1].job;
      }
      async statusOf(id: bigint) {
        return BigInt(this.jobs[Number(id) - 1].status);
      }
    }
    class Collector implements SignaturePoster {
      bodies: SignatureBody[] = [];
      async post(body: SignatureBody) {
        this.bodies.push(body);
      }
    }

    /** A chain whose one Running job has an honest 10→20 checkpoint pending, its blob then replaced by `plant`. */
    async function pendingWith(seed: number, plant: (path: string) => Promise<void>) {
      const provider = new Provider(scratch.trainer, scratch.store);
      const facts: JobFacts = await provider.acceptedJob(seedOf(seed), 10);
      const { report } = await provider.produce(facts, 20, "honest");
      const path = (provider.store.backend as FsBackend).path(report.hash.slice(2));
      await unlink(path);
      await plant(path);
      const chain = new FakeChain();
      const job = rawJob({
        epoch: 1n,
        templateId: facts.templateId,
        seed: facts.seed,
        totalSteps: 20n,
        acceptedStep: BigInt(facts.acceptedStep),
        acceptedHash: facts.acceptedHash,
        pendingStep: 20n,
        pendingHash: report.hash,
        provider: TEST_MAKER,
      });
      chain.jobs.push({ status: STATUS.Running, job });
      return chain;
    }

    async function refusedAtGrace(chain: FakeChain) {
      let now = 0;
      const wallet = hardhatWallet(3);
      const collector = new Collector();
      const v = new Verifier(
        {
          chainId: 31337n,
          escrow: hardhatWallet(20).address,
          safe: hardhatWallet(21).address,
          samples: 2,
          behaviour: "honest",
          dryRun: false,
          pollMs: 5,
          missingBlobGraceMs: 1_000,
        },
        {
          chain,
          signer: wallet,
          store: scratch.store,
          collector,
          decisions: new DecisionStore(wallet.address),
          log: createLogger({ component: "verifier", write: () => undefined }),
          now: () => now,
        },
      );
      try {
        expect(await v.tick(), "at first sight").to.include({ waiting: 1, posted: 0, abstaining: 0 });
        now = 999;
        expect(await v.tick(), "within the grace").to.include({ waiting: 1, posted: 0 });
        now = 1_000;
        expect(await v.tick(), "at the grace").to.include({ decided: 1, posted: 1 });
        expect(collector.bodies[0].message).to.include({ accept: false });
      } finally {
        await v.close();
      }
    }

    it("a symlink loop (ELOOP) under the reported name", async function () {
      await refusedAtGrace(await pendingWith(3502, (p) => symlink(p, p)));
    });

    it("a symlink through a file (ENOTDIR) under the reported name", async function () {
      await refusedAtGrace(
        await pendingWith(3503, async (p) => {
          await writeFile(`${p}.file`, "x");
          await symlink(join(`${p}.file`, "inside"), p);
        }),
      );
    });
  });

  describe("on S3: an object one key cannot give while the bucket answers for others", function () {
    /**
     * s3rver cannot store an object in an archive storage class or under a customer's key; this server answers
     * as AWS S3 does for one (403 InvalidObjectState on GET) and 404 for every other key, or 403 for every key.
     */
    let server: Server;
    let endpoint = "";
    let mode: "archived" | "denied" = "archived";
    const ARCHIVED = "cd".repeat(32);
    before(async () => {
      server = createServer((req, res) => {
        const archived = mode === "archived" && req.url?.includes(ARCHIVED);
        const [status, code] = archived
          ? [403, "InvalidObjectState"]
          : mode === "denied"
            ? [403, "AccessDenied"]
            : [404, "NoSuchKey"];
        const body =
          req.method === "HEAD"
            ? ""
            : `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${code}</Message></Error>`;
        res.writeHead(status, { "content-type": "application/xml", "content-length": Buffer.byteLength(body) });
        res.end(body);
      });
      await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
      endpoint = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    });
    after(() => new Promise<void>((r) => server.close(() => r())));

    const storeAt = () =>
      new BlobStore(
        new S3Backend(
          { bucket: "b", prefix: "p" },
          { endpoint, region: "us-east-1", credentials: { accessKeyId: "k", secretAccessKey: "s" } },
        ),
        { retry: { attempts: 2, baseDelayMs: 5 } },
      );

    it("an archived object (InvalidObjectState) is unreadable, not an outage; every key denied is an outage", async function () {
      mode = "archived";
      const store = storeAt();
      expect(await errorOf(store.get(`0x${ARCHIVED}`))).to.be.instanceOf(UnreadableBlobError);
      mode = "denied";
      expect(await errorOf(store.get(`0x${ARCHIVED}`))).to.be.instanceOf(StoreUnavailableError);
      store.close();
    });

    it("control: the SDK reads the archived answer as InvalidObjectState", async function () {
      mode = "archived";
      const client = (storeAt().backend as S3Backend).client;
      const e = (await errorOf(client.send(new GetObjectCommand({ Bucket: "b", Key: `p/${ARCHIVED}.blob` })))) as Error;
      expect(e.name).to.equal("InvalidObjectState");
      client.destroy();
    });
  });
});
