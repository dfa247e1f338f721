/**
 * How long a reporter can hold its job undecided by making its own checkpoint blob unreadable (the
 * verifiers wait out the missing-blob grace for such a blob, since a store writer other than the reporter could be
 * to blame; after it the report is refused). The real Verifier on the real runner (runVerifier), its real default
 * grace (verifier/verifier.ts DEFAULT_CONFIG.missingBlobGraceMs) and its real store (openStore, default retries),
 * ticking every second (pollMs 1,000), against a fake chain holding one Running job whose honest 10→20 checkpoint of
 * blobs-tiny is pending; its blob is then made unreadable by the reporter. Wall time from the report (the job put
 * on the chain) until the verifier posts its refusal (accept: false, logged with blob-unreadable):
 * - store_unreadable_hold_seconds_file: a file:// store, the checkpoint blob replaced by a symlink to itself (ELOOP);
 * - store_unreadable_hold_seconds_s3_ungated: the embedded s3rver without the content gate, the checkpoint blob put
 *   again straight to s3rver with a 16,200-byte x-amz-meta header (every SDK read then overflows: "Header overflow");
 * - store_unreadable_hold_seconds_max: the larger of the two; store_unreadable_grace_seconds: the configured grace.
 * Through the content gate the blob cannot be made unreadable (the gate strips a writer's metadata and rewrites such
 * an object clean: test/adversary/storeMetadata.ts), so there is no gated figure. Each case takes about the grace.
 * Part "store-hold" of `npm run bench`; run alone: `node bench/storeHold.ts`.
 */
import { mkdtemp, rm, symlink, unlink } from "node:fs/promises";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { createLogger } from "../sdk/run/log.ts";
import { JobStatus, type RawJob } from "../sdk/rules/job.ts";
import type { SignaturePoster } from "../verifier/collector.ts";
import { DecisionStore } from "../verifier/decisions.ts";
import { DEFAULT_CONFIG, runVerifier, Verifier, type EscrowReader } from "../verifier/verifier.ts";
import type { SignatureBody } from "../verifier/work.ts";
import { createTrainer, FsBackend, loadTemplate, openStore, type BlobStore } from "../workloads/index.ts";
import { S3RVER_CREDENTIALS, startEmbeddedS3 } from "../workloads/store/embedded.ts";
import { rawJob } from "../test/helpers/jobs.ts";
import { hardhatWallet, Provider, seedOf, TEST_MAKER } from "../test/verifier/helpers.ts";

const TEMPLATE = "blobs-tiny";
const TICK_MS = 1_000;
/** Past what a Node client reads of a response's headers (16 KiB): every read of the object overflows. */
const PAD = "m".repeat(16_200);
const round = (x: number) => Math.round(x * 10) / 10;

/** The escrow as the verifier reads it: one Running job, its checkpoint pending. */
class OneJobChain implements EscrowReader {
  private job: RawJob;
  constructor(job: RawJob) {
    this.job = job;
  }
  async jobCount() {
    return 1n;
  }
  async jobOf() {
    return this.job;
  }
  async statusOf() {
    return BigInt(JobStatus.Running);
  }
}

/** Resolves at the first refusal posted (the moment the reporter's hold ends). */
class RefusalWatch implements SignaturePoster {
  refused: Promise<number>;
  private resolve!: (at: number) => void;
  constructor() {
    this.refused = new Promise((r) => (this.resolve = r));
  }
  async post(body: SignatureBody) {
    if ((body.message as { accept?: boolean }).accept === false) this.resolve(performance.now());
  }
}

/** An honest checkpoint 10→20 in `store` and the chain's record of it pending; `upload` has its bytes. */
async function honestReport(store: BlobStore, seed: number) {
  const trainer = await createTrainer(loadTemplate(TEMPLATE));
  try {
    const provider = new Provider(trainer, store);
    const facts = await provider.acceptedJob(seedOf(seed), 10);
    const { report, upload } = await provider.produce(facts, 20, "honest");
    const job = rawJob({
      epoch: 1n,
      templateId: facts.templateId,
      seed: facts.seed,
      totalSteps: 20n,
      acceptedStep: BigInt(facts.acceptedStep),
      acceptedHash: facts.acceptedHash,
      pendingStep: BigInt(report.step),
      pendingHash: report.hash,
      provider: TEST_MAKER,
    });
    return { job, name: report.hash.slice(2), bytes: upload!.checkpointBytes };
  } finally {
    await trainer.close();
  }
}

/**
 * Seconds from the report until one honest verifier, reading `store`, posts its refusal. Checks that the refusal
 * is for the unreadable blob (and nothing else), so the figure is the hold it measures.
 */
async function holdSeconds(store: BlobStore, job: RawJob): Promise<number> {
  const wallet = hardhatWallet(3);
  const lines: string[] = [];
  const log = createLogger({ component: "verifier", write: (l) => lines.push(l) });
  const watch = new RefusalWatch();
  const config = { ...DEFAULT_CONFIG, chainId: 31337n, pollMs: TICK_MS };
  const v = new Verifier(
    { ...config, escrow: hardhatWallet(20).address, safe: hardhatWallet(21).address },
    {
      chain: new OneJobChain(job),
      signer: wallet,
      store,
      collector: watch,
      decisions: new DecisionStore(wallet.address),
      log,
    },
  );
  const stop = new AbortController();
  const reportedAt = performance.now();
  const running = runVerifier(v, log, { signal: stop.signal });
  const limit = setTimeout(() => stop.abort(), 4 * DEFAULT_CONFIG.missingBlobGraceMs);
  try {
    const refusedAt = await Promise.race([watch.refused, running.then(() => NaN)]);
    if (Number.isNaN(refusedAt)) throw new Error("no refusal within 4× the grace");
    const decided = lines.find((l) => l.includes("checkpoint decided")) ?? "";
    if (!decided.includes("blob-unreadable")) throw new Error(`refused for another reason: ${decided}`);
    return (refusedAt - reportedAt) / 1000;
  } finally {
    clearTimeout(limit);
    stop.abort();
    await running;
    await v.close();
  }
}

/** (i) file://: the reporter replaces its checkpoint blob by a symlink to itself; every open fails with ELOOP. */
async function fileCase(dir: string): Promise<number> {
  const url = pathToFileURL(join(dir, "file-store")).href;
  const { job, name } = await honestReport(openStore(url), 4101);
  const path = new FsBackend(join(dir, "file-store")).path(name);
  await unlink(path);
  await symlink(path, path);
  return holdSeconds(openStore(url), job);
}

/** A raw PUT straight to s3rver (it checks no signature), as a writer of a store without the gate can send it. */
function rawPut(endpoint: string, path: string, body: Uint8Array, headers: Record<string, string>) {
  const u = new URL(endpoint);
  return new Promise<number>((resolve, reject) => {
    const headersOut = { ...headers, "content-length": String(body.byteLength) };
    const r = request({ host: u.hostname, port: u.port, method: "PUT", path, headers: headersOut }, (a) => {
      a.resume().on("end", () => resolve(a.statusCode ?? 0));
    });
    r.on("error", reject);
    r.end(body);
  });
}

/** (ii) S3 without the gate: the reporter puts its checkpoint blob again, right bytes, with a 16 kB metadata header. */
async function s3UngatedCase(dir: string): Promise<number> {
  const s3 = await startEmbeddedS3({ dir: join(dir, "s3"), gate: false, prefix: "hold" });
  const s3opts = { endpoint: s3.endpoint, region: "us-east-1", credentials: S3RVER_CREDENTIALS };
  const open = () => openStore(s3.storeUrl, { s3: s3opts });
  const [maker, verifier] = [open(), open()];
  try {
    const { job, name, bytes } = await honestReport(maker, 4102);
    const status = await rawPut(s3.endpoint, `/${s3.bucket}/hold/${name}.blob`, bytes, { "x-amz-meta-pad": PAD });
    if (status !== 200) throw new Error(`s3rver refused the padded put (${status})`);
    return await holdSeconds(verifier, job);
  } finally {
    maker.close();
    verifier.close();
    await s3.close();
  }
}

export async function benchStoreHold(): Promise<Record<string, number>> {
  const dir = await mkdtemp(join(tmpdir(), "gpuchain-bench-store-hold-"));
  try {
    const file = await fileCase(dir);
    const s3 = await s3UngatedCase(dir);
    return {
      store_unreadable_hold_seconds_file: round(file),
      store_unreadable_hold_seconds_s3_ungated: round(s3),
      store_unreadable_hold_seconds_max: round(Math.max(file, s3)),
      store_unreadable_grace_seconds: DEFAULT_CONFIG.missingBlobGraceMs / 1000,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const [k, v] of Object.entries(await benchStoreHold())) console.log(`${k}: ${v}`);
}
