// The checkpoint store and segment commitments. `node bench/store.ts` prints `name: value` lines.
//   store_put_ms_400kB_<s3|file>      median wall time of one verified put of a fresh 400 kB blob (the size of an
//                                     MNIST state): the embedded S3 server (s3rver on loopback) or a temp folder
//   store_get_ms_400kB_<s3|file>      median wall time of one verified get (sha256 checked) of such a blob
//   states_stored_per_checkpoint_mnist-mlp   state blobs + the embedded final state of one honest checkpoint at
//                                     interval 100 (the demo's), with the template default segment length
//   states_stored_per_checkpoint_every_state_mnist-mlp   the same with every state stored (m = 1), for comparison
//   checkpoint_bytes_per_interval_mnist-mlp  bytes put for that checkpoint (state blobs + checkpoint blob)
//   provider_store_stall_share_mnist-mlp     time training waited on the store (background boundary uploads past
//                                     the bound, then the end of the interval: the last boundary put and the
//                                     checkpoint blob) ÷ time inside trainer.trainStep, for an interval of 100
//                                     MNIST steps uploading to the embedded S3 server; median of 7 intervals
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { putUpload } from "../agent/blobs.ts";
import { honestUpload } from "../agent/segment.ts";
import { BackgroundUploads } from "../agent/uploads.ts";
import {
  BlobStore,
  createTrainer,
  defaultSegmentSteps,
  encodeState,
  FsBackend,
  loadTemplate,
  S3Backend,
  storedSteps,
  ZERO_HASH,
  type Trainer,
  type TrainingState,
} from "../workloads/index.ts";
import { S3RVER_CREDENTIALS, startEmbeddedS3 } from "../workloads/store/embedded.ts";
import { TEST_MAKER, TEST_PROFILE } from "../test/verifier/helpers.ts";

const INTERVAL = 100;
const INTERVALS = 7;
const SEED = "0x" + "5f".repeat(32);
const round = (x: number, d = 3) => Math.round(x * 10 ** d) / 10 ** d;
const median = (xs: number[]) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function putGetMs(store: BlobStore, n = 20): Promise<{ put: number; get: number }> {
  const puts: number[] = [];
  const gets: number[] = [];
  for (let i = 0; i < n; i++) {
    const bytes = Uint8Array.from({ length: 400_000 }, (_, j) => (j * 7 + i * 13) & 0xff);
    const t0 = performance.now();
    const hash = await store.put(bytes);
    const t1 = performance.now();
    await store.get(hash);
    gets.push(performance.now() - t1);
    puts.push(t1 - t0);
  }
  return { put: median(puts), get: median(gets) };
}

/** One interval of MNIST steps from `start`, boundary states uploaded in the background, then the final upload. */
async function interval(tr: Trainer, templateId: string, store: BlobStore, start: TrainingState, prev: string) {
  const from = start.step;
  const boundaries = new Set(storedSteps(from, from + INTERVAL, defaultSegmentSteps(INTERVAL)));
  const uploads = new BackgroundUploads(store);
  const states: TrainingState[] = [];
  let trainMs = 0;
  let s = start;
  for (let step = from + 1; step <= from + INTERVAL; step++) {
    const t0 = performance.now();
    s = (await tr.trainStep(s, SEED, step)).state;
    trainMs += performance.now() - t0;
    states.push(s);
    if (boundaries.has(step)) await uploads.offer(encodeState(s));
  }
  const seg = {
    templateId,
    seed: SEED,
    prevCheckpointHash: prev,
    start,
    maker: TEST_MAKER,
    profile: TEST_PROFILE,
    states,
    trainedSteps: INTERVAL,
    loss: 0,
  };
  const upload = honestUpload(seg);
  const t1 = performance.now();
  await Promise.all([uploads.drain(), putUpload(store, upload, uploads.put)]);
  const stallMs = uploads.stallMs + (performance.now() - t1);
  return { seg, upload, trainMs, stallMs, end: s };
}

/** INTERVALS intervals of 100 MNIST steps as the agent uploads them; the median interval's figures. */
async function stallShare(store: BlobStore) {
  const template = loadTemplate("mnist-mlp");
  const tr = await createTrainer(template);
  try {
    let s: TrainingState = tr.initialState(SEED);
    for (let i = 0; i < 3; i++) s = (await tr.trainStep(s, SEED, s.step + 1)).state; // warm-up
    let start = tr.initialState(SEED);
    let prev = ZERO_HASH;
    const runs = [];
    for (let i = 0; i < INTERVALS; i++) {
      const r = await interval(tr, template.templateId, store, start, prev);
      runs.push(r);
      start = r.end;
      prev = r.upload.reportedHash;
    }
    const mid = runs.slice().sort((a, b) => a.stallMs / a.trainMs - b.stallMs / b.trainMs)[Math.floor(INTERVALS / 2)];
    const every = honestUpload(runs[0].seg, 1);
    const bytes = (u: typeof every) =>
      u.stateBlobs.reduce((a, b) => a + b.byteLength, 0) + u.checkpointBytes.byteLength;
    return {
      "states_stored_per_checkpoint_mnist-mlp": mid.upload.stateBlobs.length + 1,
      "states_stored_per_checkpoint_every_state_mnist-mlp": every.stateBlobs.length + 1,
      "checkpoint_bytes_per_interval_mnist-mlp": bytes(mid.upload),
      "checkpoint_bytes_per_interval_every_state_mnist-mlp": bytes(every),
      "provider_store_stall_share_mnist-mlp": round(mid.stallMs / mid.trainMs, 4),
      "provider_store_stall_ms_per_interval_mnist-mlp": round(mid.stallMs, 1),
      "provider_training_ms_per_interval_mnist-mlp": round(mid.trainMs, 1),
    };
  } finally {
    await tr.close();
  }
}

export async function benchStore(): Promise<Record<string, number>> {
  const dir = await mkdtemp(join(tmpdir(), "gpuchain-bench-store-"));
  const s3 = await startEmbeddedS3({ dir: join(dir, "s3") });
  const backend = new S3Backend(
    { bucket: s3.bucket, prefix: "bench" },
    { endpoint: s3.endpoint, region: "us-east-1", credentials: S3RVER_CREDENTIALS },
  );
  const store = new BlobStore(backend);
  try {
    const s3ms = await putGetMs(store);
    const fsms = await putGetMs(new BlobStore(new FsBackend(join(dir, "fs"))));
    return {
      store_put_ms_400kB_s3: round(s3ms.put, 2),
      store_get_ms_400kB_s3: round(s3ms.get, 2),
      store_put_ms_400kB_file: round(fsms.put, 2),
      store_get_ms_400kB_file: round(fsms.get, 2),
      ...(await stallShare(store)),
    };
  } finally {
    backend.close();
    await s3.close();
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const [k, v] of Object.entries(await benchStore())) console.log(`${k}: ${v}`);
}
