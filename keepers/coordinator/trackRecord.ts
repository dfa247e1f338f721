/**
 * What the chain says about each provider's past work, for the no-starving rules (decide.ts): accepted steps
 * (CheckpointAccepted) and strikes — holds that ended without an accepted checkpoint, whatever ended them (taken
 * away, lease lapsed, refused, or a report that lapsed undecided). Built only from escrow events, in log order, so
 * a restarted coordinator rebuilds the same picture from `--from-block`.
 *
 * A hold is one (job, epoch, provider). It is struck once, when it ends without an accepted checkpoint: at its
 * ProviderUnassigned, or at the CheckpointLapsed of its report if it left with the report pending. A strike counts
 * for the back-off across jobs and un-proves the provider (`provenFirst`) until its next accepted checkpoint, which
 * clears the strikes. A holder that never reported, or whose report lapsed, is also kept off that job for good
 * (`idleOn`); a refused one is fenced on chain instead.
 */
import { UnassignReason } from "../../sdk/rules/job.ts";
import type { TrackRecord } from "./decide.ts";

/** Chain time (s) of a block: the strike's time comes from the block that holds its event. */
export type BlockTime = (blockNumber: number) => Promise<bigint>;

/** What the events showed of one hold. */
interface Hold {
  reported: boolean;
  accepted: boolean;
  struck: boolean;
}

export class TrackRecords {
  /** Per provider (lower-case). */
  readonly records = new Map<string, TrackRecord>();
  /** Per job id (string): providers kept off it for good (held it without a report, or their report lapsed). */
  readonly idleOn = new Map<string, Set<string>>();
  /** Per job id (string): providers whose hold of it ended without an accepted checkpoint. */
  readonly struckOn = new Map<string, Set<string>>();
  /** Per job id: its holds by `${epoch}:${provider}`. */
  private readonly holds = new Map<string, Map<string, Hold>>();
  /** Strikes whose block time is not read yet: provider → block number of its latest strike. */
  private readonly unresolved = new Map<string, number>();

  /** Applies one escrow event (name and args as ethers parses them). */
  apply(name: string, args: Record<string, unknown>, blockNumber: number): void {
    const job = String(args.jobId);
    const provider = String(args.provider).toLowerCase();
    if (name === "CheckpointReported") this.holdOf(job, args.epoch, provider).reported = true;
    else if (name === "CheckpointAccepted") {
      const r = this.recordOf(provider);
      r.acceptedSteps += Number(args.stepsCredited);
      r.strikes = 0;
      this.unresolved.delete(provider);
      this.holdOf(job, args.epoch, provider).accepted = true;
    } else if (name === "ProviderUnassigned") {
      const hold = this.holdOf(job, BigInt(args.newEpoch as bigint) - 1n, provider);
      if (hold.accepted) return;
      // A refused holder is fenced on chain; one that never reported is kept off the job here.
      const refused = Number(args.reason) === UnassignReason.Refused;
      if (!hold.reported && !refused) addTo(this.idleOn, job, provider);
      this.strike(job, provider, hold, blockNumber);
    } else if (name === "CheckpointLapsed") {
      const hold = this.holdOf(job, args.epoch, provider);
      addTo(this.idleOn, job, provider);
      this.strike(job, provider, hold, blockNumber);
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
    for (const m of [this.idleOn, this.struckOn, this.holds]) m.delete(jobId.toString());
  }

  /** One strike per hold, however many of its events tell that it ended without an accepted checkpoint. */
  private strike(job: string, provider: string, hold: Hold, blockNumber: number): void {
    if (hold.struck) return;
    hold.struck = true;
    addTo(this.struckOn, job, provider);
    this.recordOf(provider).strikes++;
    this.unresolved.set(provider, blockNumber);
  }

  private holdOf(job: string, epoch: unknown, provider: string): Hold {
    let byKey = this.holds.get(job);
    if (!byKey) this.holds.set(job, (byKey = new Map()));
    const key = `${String(epoch)}:${provider}`;
    let hold = byKey.get(key);
    if (!hold) byKey.set(key, (hold = { reported: false, accepted: false, struck: false }));
    return hold;
  }

  private recordOf(provider: string): TrackRecord {
    let r = this.records.get(provider);
    if (!r) this.records.set(provider, (r = { acceptedSteps: 0, strikes: 0, lastStrikeAt: 0n }));
    return r;
  }
}

function addTo(m: Map<string, Set<string>>, job: string, provider: string): void {
  let s = m.get(job);
  if (!s) m.set(job, (s = new Set()));
  s.add(provider);
}
