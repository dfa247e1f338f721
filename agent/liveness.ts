/**
 * Liveness, two layers: a signed off-chain heartbeat to the coordinator every HEARTBEAT_DEFAULTS.intervalMs (idle
 * beats with jobId 0), and the on-chain lease, extended with `heartbeat(job, epoch)` every leaseDuration/3 while
 * working. An unreachable coordinator is only a warning: the on-chain lease is what the protocol relies on.
 */
import type { Wallet } from "ethers";
import { machineId } from "../sdk/run/machine.ts";
import type { Problems } from "./problems.ts";
import { signHeartbeat, type Heartbeat, type SignedHeartbeat } from "../sdk/rules/heartbeat.ts";
import type { Logger } from "../sdk/run/log.ts";
import { sleep } from "../sdk/run/retry.ts";
import { sendHeartbeat } from "./sends.ts";
import { isFenceRejection, type Chain } from "./chain.ts";

/** Posts one signed heartbeat; throws when the coordinator cannot be reached. */
export type HeartbeatSender = (beat: SignedHeartbeat) => Promise<void>;

export function httpHeartbeatSender(url: string, timeoutMs = 2_000): HeartbeatSender {
  return async (beat) => {
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(beat),
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!res.ok) throw new Error(`coordinator answered ${res.status} ${res.statusText}`);
  };
}

/** What the agent is doing now, as its heartbeats tell it. */
export interface Activity {
  jobId: bigint;
  epoch: bigint;
  step: number;
  loss?: number;
  stepsPerSecond?: number;
}

export interface LivenessOptions {
  wallet: Wallet;
  chainId: bigint;
  /** The escrow's address: named in every signed beat (it counts for no other deployment). */
  escrow: string;
  send: HeartbeatSender;
  chain: Chain;
  logger: Logger;
  signal: AbortSignal;
  intervalMs: number;
  leaseEveryMs: number;
  now: () => number;
  /** write-after-fence: keep writing after a fence rejection instead of going quiet. */
  ignoreFence?: boolean;
  /** This machine's arithmetic profile, reported in every beat (workloads/profile.ts). */
  profile?: string;
  /** What keeps this provider from working now: the newest open problem rides in every beat. */
  problems?: Problems;
}

export class Liveness {
  opts: LivenessOptions;
  activity: Activity | undefined;
  private coordinatorDown = false;
  private lastLeaseAt = 0;
  private loops: Promise<void>[] = [];
  private stopper = new AbortController();
  private signal: AbortSignal;

  constructor(opts: LivenessOptions) {
    this.opts = opts;
    this.signal = AbortSignal.any([opts.signal, this.stopper.signal]);
  }

  /** Sets what the beats report; undefined = idle. A new job/epoch extends the lease on the next lease tick. */
  set(activity: Activity | undefined): void {
    const prev = this.activity;
    if (!activity || !prev || prev.jobId !== activity.jobId || prev.epoch !== activity.epoch) this.lastLeaseAt = 0;
    this.activity = activity;
  }

  update(fields: Partial<Activity>): void {
    if (this.activity) this.activity = { ...this.activity, ...fields };
  }

  start(): void {
    this.loops = [this.beatLoop(), this.leaseLoop()];
  }

  /** Stops both loops (also when the agent ends for another reason than its signal) and waits for them. */
  async stop(): Promise<void> {
    this.stopper.abort();
    await Promise.all(this.loops);
  }

  async beatOnce(): Promise<void> {
    const a = this.activity;
    const h: Heartbeat = {
      chainId: this.opts.chainId.toString(),
      escrow: this.opts.escrow,
      machine: machineId(),
      provider: this.opts.wallet.address,
      jobId: (a?.jobId ?? 0n).toString(),
      epoch: (a?.epoch ?? 0n).toString(),
      step: a?.step ?? 0,
      loss: a?.loss !== undefined && Number.isFinite(a.loss) ? a.loss : undefined,
      stepsPerSecond: a?.stepsPerSecond,
      profile: this.opts.profile,
      problem: this.opts.problems?.current(),
      sentAt: this.opts.now(),
    };
    try {
      await this.opts.send(await signHeartbeat(this.opts.wallet, h));
      if (this.coordinatorDown) this.opts.logger.info("coordinator reachable again");
      this.coordinatorDown = false;
    } catch (err) {
      if (!this.coordinatorDown) {
        this.opts.logger.warn("coordinator unreachable; heartbeats continue, the on-chain lease still counts", {
          error: (err as Error).message,
        });
      }
      this.coordinatorDown = true;
    }
  }

  /** Extends the on-chain lease if working and due. Returns the write's outcome when one was sent. */
  async leaseOnce(): Promise<void> {
    const a = this.activity;
    if (!a || this.opts.now() - this.lastLeaseAt < this.opts.leaseEveryMs) return;
    this.lastLeaseAt = this.opts.now();
    const { escrow } = this.opts.chain.protocol;
    const r = await this.opts.chain.write("heartbeat", () => sendHeartbeat(escrow, a.jobId, a.epoch));
    if (r.ok) {
      this.opts.logger.info("lease extended", { job: a.jobId, epoch: a.epoch });
    } else if (isFenceRejection(r)) {
      this.opts.logger.warn(this.opts.ignoreFence ? "heartbeat after fence rejected by the chain" : "fenced", {
        job: a.jobId,
        epoch: a.epoch,
        reason: r.description,
      });
      if (!this.opts.ignoreFence && this.activity === a) this.activity = undefined;
    } else {
      this.opts.logger.warn("lease heartbeat failed", { job: a.jobId, epoch: a.epoch, reason: r.description });
    }
  }

  private async beatLoop(): Promise<void> {
    // Start to start: a slow answer from the coordinator does not stretch the period.
    while (!this.signal.aborted) {
      const t0 = this.opts.now();
      await this.beatOnce();
      await sleep(Math.max(0, this.opts.intervalMs - (this.opts.now() - t0)), this.signal);
    }
  }

  private async leaseLoop(): Promise<void> {
    const tick = Math.min(this.opts.leaseEveryMs, 1_000);
    while (!this.signal.aborted) {
      await this.leaseOnce();
      await sleep(tick, this.signal);
    }
  }
}
