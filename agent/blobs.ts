/**
 * The agent's use of the checkpoint store: upload a segment (state blobs first, the checkpoint last, so a reported
 * hash never names a blob whose states are missing) and load a committed checkpoint to resume from.
 * Blobs are never deleted or overwritten: accepted checkpoints are never lost.
 */
import { randomBytes } from "node:crypto";
import { link, mkdir, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import {
  decodeCheckpoint, FsCheckpointStore, WorkloadError, type Checkpoint, type CheckpointStore,
} from "../workloads/index.ts";
import type { Upload } from "./segment.ts";

/** Puts at a time: a store's latency is mostly per blob (files, requests), so a few in flight hide most of it. */
export const PUT_CONCURRENCY = 8;

export async function putUpload(store: CheckpointStore, upload: Upload): Promise<void> {
  const queue = upload.stateBlobs.slice();
  const worker = async () => {
    for (let blob = queue.shift(); blob; blob = queue.shift()) await store.put(blob);
  };
  await Promise.all(Array.from({ length: Math.min(PUT_CONCURRENCY, queue.length) }, worker));
  if (upload.placeUnderReportedHash) await placeUnder(store, upload.reportedHash, upload.checkpointBytes);
  else await store.put(upload.checkpointBytes);
}

/**
 * hash-mismatch fault: stores `bytes` under another hash's name. With the file-system store the file is written
 * under that name (never replacing an existing one), so a verifier fetching the reported hash gets other content.
 * Other stores are content-addressed only: the bytes go under their own hash and the reported one names nothing.
 */
export async function placeUnder(store: CheckpointStore, hash: string, bytes: Uint8Array): Promise<void> {
  if (!(store instanceof FsCheckpointStore)) {
    await store.put(bytes);
    return;
  }
  await mkdir(store.dir, { recursive: true });
  // Same file layout as FsCheckpointStore (<dir>/<hex>.blob); link() fails rather than overwrite.
  const dest = join(store.dir, `${hash.toLowerCase().slice(2)}.blob`);
  const tmp = `${dest}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`;
  await writeFile(tmp, bytes, { flag: "wx" });
  try {
    await link(tmp, dest);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  } finally {
    await unlink(tmp).catch(() => {});
  }
}

export type Loaded =
  | { ok: true; checkpoint: Checkpoint; bytes: Uint8Array }
  | { ok: false; reason: string };

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
