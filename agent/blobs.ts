/**
 * The agent's use of the checkpoint store: upload a segment (every blob before the report, so a reported hash
 * never names a blob whose states are missing) and load a committed checkpoint to resume from.
 * Blobs are never deleted or overwritten by the agent: accepted checkpoints are never lost. While a report waits for
 * its decision, the agent keeps its blobs in the store (guardBlobs) against anyone else who may write there.
 */
import {
  blobHash,
  BlobStore,
  decodeCheckpoint,
  HashMismatchError,
  NotFoundError,
  UnreadableBlobError,
  WorkloadError,
  type Checkpoint,
  type CheckpointStore,
} from "../workloads/index.ts";
import type { Upload } from "./segment.ts";

/** Puts at a time: a store's latency is mostly per blob (files, requests), so a few in flight hide most of it. */
export const PUT_CONCURRENCY = 8;

/**
 * Puts an upload's state blobs (except those already put, by hash) and its checkpoint blob, a few at a time.
 * The order among them does not matter: nobody learns the checkpoint's hash before the report, which is sent
 * only after every put has succeeded.
 */
export async function putUpload(store: CheckpointStore, upload: Upload, alreadyPut?: Set<string>): Promise<void> {
  const known = upload.stateHashes?.length === upload.stateBlobs.length ? upload.stateHashes : undefined;
  const hashOf = (i: number) => known?.[i] ?? blobHash(upload.stateBlobs[i]);
  const states = alreadyPut ? upload.stateBlobs.filter((_, i) => !alreadyPut.has(hashOf(i))) : upload.stateBlobs;
  const last = async () => {
    if (upload.placeUnderReportedHash) await placeUnder(store, upload.reportedHash, upload.checkpointBytes);
    else await store.put(upload.checkpointBytes);
  };
  const queue: (() => Promise<unknown>)[] = [last, ...states.map((b) => () => store.put(b))];
  const worker = async () => {
    for (let job = queue.shift(); job; job = queue.shift()) await job();
  };
  await Promise.all(Array.from({ length: Math.min(PUT_CONCURRENCY, queue.length) }, worker));
}

/**
 * What a reported checkpoint needs in the store: its state blobs and, unless a fault placed other bytes under the
 * reported hash on purpose, its checkpoint blob.
 */
export function blobsOf(upload: Upload): Uint8Array[] {
  return upload.placeUnderReportedHash ? upload.stateBlobs : [...upload.stateBlobs, upload.checkpointBytes];
}

/**
 * Checks that each blob is in the store under its hash, and puts it again where it is missing or holds other bytes
 * (anyone who may write the store could overwrite a put after it landed; the verifiers wait out such a
 * blob for a grace period before it is the reporter's problem). Returns how many it put again. A blob the store
 * cannot give back at all (no plain blob under the name) is put again too; the store's own errors propagate.
 */
export async function guardBlobs(store: CheckpointStore, blobs: readonly Uint8Array[]): Promise<number> {
  let repaired = 0;
  for (const bytes of blobs) {
    try {
      await store.get(blobHash(bytes), bytes.byteLength);
      continue;
    } catch (err) {
      if (!(err instanceof NotFoundError || err instanceof HashMismatchError || err instanceof UnreadableBlobError))
        throw err;
    }
    await store.put(bytes);
    repaired++;
  }
  return repaired;
}

/**
 * hash-mismatch fault: stores `bytes` under another hash's name, written raw to the store's backend (file or S3)
 * and only where that name is free, so a verifier fetching the reported hash gets other content. A store without
 * a raw backend is content-addressed only: the bytes go under their own hash and the reported one names nothing.
 */
export async function placeUnder(store: CheckpointStore, hash: string, bytes: Uint8Array): Promise<void> {
  if (!(store instanceof BlobStore)) {
    await store.put(bytes);
    return;
  }
  const name = hash.toLowerCase().slice(2);
  if (!(await store.backend.exists(name))) await store.backend.write(name, bytes);
}

export type Loaded = { ok: true; checkpoint: Checkpoint; bytes: Uint8Array } | { ok: false; reason: string };

/** Fetches (hash-verified by the store) and decodes a checkpoint; a missing or bad blob is a reason, not a throw. */
export async function loadCheckpoint(store: CheckpointStore, hash: string): Promise<Loaded> {
  try {
    const bytes = await store.get(hash);
    return { ok: true, checkpoint: decodeCheckpoint(bytes), bytes };
  } catch (err) {
    if (err instanceof WorkloadError) return { ok: false, reason: err.message };
    throw err;
  }
}
