/**
 * Accepted checkpoints read ahead by an idle agent (failover ≤ 5 s): the latest accepted checkpoint of
 * each running job someone else holds, fetched (hash-verified) and decoded in the background, so a takeover
 * starts training from memory instead of reading and decoding it first. One per job, replaced when the job's
 * accepted checkpoint moves on, dropped once taken. Blobs are content-addressed: a read ahead is the same blob as
 * a read later. A read that failed is not kept: the takeover reads again (an I/O failure decides nothing).
 */
import type { CheckpointStore } from "../workloads/index.ts";
import { loadCheckpoint, type Loaded } from "./blobs.ts";

export class CheckpointPrefetch {
  private readonly store: CheckpointStore;
  private readonly byJob = new Map<string, { hash: string; loaded: Promise<Loaded | undefined> }>();

  constructor(store: CheckpointStore) {
    this.store = store;
  }

  /** Starts reading `hash`, job `jobId`'s accepted checkpoint, unless it is being read already. */
  ahead(jobId: bigint, hash: string): void {
    const key = jobId.toString();
    const want = hash.toLowerCase();
    if (this.byJob.get(key)?.hash === want) return;
    const loaded = loadCheckpoint(this.store, want).catch(() => undefined);
    this.byJob.set(key, { hash: want, loaded });
  }

  /** Forgets the reads of jobs not in `keep` (finished, or ours now). */
  retain(keep: Set<string>): void {
    for (const key of this.byJob.keys()) if (!keep.has(key)) this.byJob.delete(key);
  }

  /** The checkpoint `hash` of job `jobId` if it was read ahead and read well; undefined: read it now. */
  async take(jobId: bigint, hash: string): Promise<Loaded | undefined> {
    const key = jobId.toString();
    const entry = this.byJob.get(key);
    if (entry?.hash !== hash.toLowerCase()) return undefined;
    this.byJob.delete(key);
    const loaded = await entry.loaded;
    return loaded?.ok ? loaded : undefined;
  }
}
