/**
 * Segment-boundary states go to the store while training continues: each boundary state is put in the
 * background as soon as it is trained, and training waits only when `maxBehind` puts are already in flight
 * (a slow store then slows training instead of piling states up in memory). The time training waited is
 * measured (`stallMs`); what was offered is remembered by hash, so the final upload does not put it twice.
 */
import { blobHash, type CheckpointStore } from "../workloads/index.ts";

/**
 * 4, was 2: a segment is now n/20 steps (was n/10), so twice the boundary states go up per interval and
 * two slots made training wait on the store 5.7 % of the time (bench provider_stall_share, target ≤ 5 %). A state
 * in flight costs its bytes (MNIST: ~200 KB).
 */
export const MAX_UPLOADS_BEHIND = 4;

export class BackgroundUploads {
  /** Milliseconds training waited for a free upload slot (the final drain is the caller's to time). */
  stallMs = 0;
  /** Hashes of every blob offered; drain() makes sure each is stored. */
  readonly put = new Set<string>();
  private store: CheckpointStore;
  private maxBehind: number;
  private inflight = new Set<Promise<void>>();
  private error: unknown;
  private now: () => number;

  constructor(store: CheckpointStore, maxBehind = MAX_UPLOADS_BEHIND, now = () => performance.now()) {
    this.store = store;
    this.maxBehind = maxBehind;
    this.now = now;
  }

  /** Starts putting `bytes`; waits first while `maxBehind` puts are in flight. */
  async offer(bytes: Uint8Array): Promise<void> {
    while (this.inflight.size >= this.maxBehind) {
      const t0 = this.now();
      await Promise.race(this.inflight);
      this.stallMs += this.now() - t0;
    }
    this.put.add(blobHash(bytes));
    const p: Promise<void> = this.store
      .put(bytes)
      .then(
        () => undefined,
        (err) => void (this.error ??= err),
      )
      .finally(() => this.inflight.delete(p));
    this.inflight.add(p);
  }

  /** Waits for every put; throws the first failure (the store's retries are already spent). */
  async drain(): Promise<void> {
    await Promise.all(this.inflight);
    if (this.error !== undefined) throw this.error;
  }
}
