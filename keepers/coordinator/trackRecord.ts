/**
 * What the chain says about each provider's past work, for the no-starving rules (decide.ts): accepted steps
 * (CheckpointAccepted) and idle unassignments — a ProviderUnassigned (by the coordinator or after a lapsed lease)
 * whose provider reported nothing in the epoch it held. Built only from escrow events, in log order, so a
 * restarted coordinator rebuilds the same picture from `--from-block`.
 *
 * An idle unassignment keeps the provider off that job for good (`idleOn`) and counts a strike for the back-off
 * across jobs; an accepted checkpoint clears the strikes (not the per-job exclusion). A refused checkpoint is not
 * idleness: its reporter is fenced instead.
 */
import { UnassignReason } from "../../sdk/job.ts";
import type { TrackRecord } from "./decide.ts";

/** Chain time (s) of a block: the strike's time comes from the block that holds its event. */
export type BlockTime = (blockNumber: number) => Promise<bigint>;

export class TrackRecords {
  /** Per provider (lower-case). */
  readonly records = new Map<string, TrackRecord>();
  /** Per job id (string): providers unassigned idle from it. */
  readonly idleOn = new Map<string, Set<string>>();
  /** Per job id: `${epoch}:${provider}` of the latest report (a report comes before its epoch's unassignment). */
  private readonly lastReport = new Map<string, string>();
  /** Strikes whose block time is not read yet: provider → block number of its latest strike. */
  private readonly unresolved = new Map<string, number>();

  /** Applies one escrow event (name and args as ethers parses them). */
  apply(name: string, args: Record<string, unknown>, blockNumber: number): void {
    const job = String(args.jobId);
    const provider = String(args.provider).toLowerCase();
    if (name === "CheckpointReported") this.lastReport.set(job, `${args.epoch}:${provider}`);
    else if (name === "CheckpointAccepted") {
      const r = this.recordOf(provider);
      r.acceptedSteps += Number(args.stepsCredited);
      r.idleStrikes = 0;
      this.unresolved.delete(provider);
    } else if (name === "ProviderUnassigned" && Number(args.reason) !== UnassignReason.Refused) {
      const held = BigInt(args.newEpoch as bigint) - 1n;
      if (this.lastReport.get(job) === `${held}:${provider}`) return;
      if (!this.idleOn.has(job)) this.idleOn.set(job, new Set());
      this.idleOn.get(job)!.add(provider);
      this.recordOf(provider).idleStrikes++;
      this.unresolved.set(provider, blockNumber);
    }
  }

  /** Reads the block time of every strike applied since the last call (one read per distinct block). */
  async resolve(blockTime: BlockTime): Promise<void> {
    const times = new Map<number, bigint>();
    for (const [provider, block] of this.unresolved) {
      if (!times.has(block)) times.set(block, await blockTime(block));
      this.recordOf(provider).lastStrikeAt = times.get(block)!;
    }
    this.unresolved.clear();
  }

  /** A job past training is never assigned again: forget what only it needed. */
  forgetJob(jobId: bigint): void {
    this.idleOn.delete(jobId.toString());
    this.lastReport.delete(jobId.toString());
  }

  private recordOf(provider: string): TrackRecord {
    let r = this.records.get(provider);
    if (!r) this.records.set(provider, (r = { acceptedSteps: 0, idleStrikes: 0, lastStrikeAt: 0n }));
    return r;
  }
}
