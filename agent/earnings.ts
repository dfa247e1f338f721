/**
 * What the provider earned, said in its own terminal: one line per accepted checkpoint, then when
 * its earnings on a job become withdrawable and the exact command that withdraws them. Read from the escrow's
 * events (CheckpointAccepted, VerdictSubmitted, JobSettled, DisputeResolved, ProviderSlashed) and its state at each
 * event's block, never from the agent's own arithmetic: what the line says is what the chain credited.
 *
 * The rule (contracts/JobEscrow.sol): a provider's earnings on a job are claimable once the job is Settled (or
 * Cancelled); a job is settleable the second after its verdict + its dispute window (sdk/rules/settleTiming.ts), and
 * anyone settles it (the finalizer keeper does). `gpuchain withdraw` claims them and withdraws what is owed.
 */
import type { Result } from "ethers";
import { eventTopics } from "../sdk/node/chainWake.ts";
import { formatDuration, formatTime, formatUsdc } from "../sdk/words/format.ts";
import type { Protocol } from "../sdk/node/contracts.ts";
import type { Logger } from "../sdk/run/log.ts";
import { sleep } from "../sdk/run/retry.ts";
import { settleTiming } from "../sdk/rules/settleTiming.ts";

/** The facts of one accepted checkpoint, as the chain tells them. */
export interface Credited {
  jobId: bigint;
  step: number;
  /** This checkpoint's credit (the event's amount). */
  amount: bigint;
  /** What the escrow holds for the provider on the job right after it (earningsOf at the event's block). */
  total: bigint;
  totalSteps: number;
  disputeWindow: bigint;
  /** The acceptance's block time (Unix seconds). */
  at: bigint;
}

/** "checkpoint at step 40 accepted: credited 0.040000 USDC (total 0.080000 USDC on job 3); withdrawable …". */
export function creditedLine(c: Credited): string {
  const window = formatDuration(c.disputeWindow);
  const when =
    c.step >= c.totalSteps
      ? // The last checkpoint: the verdict follows it at once, then the window runs.
        `withdrawable after settlement, about ${formatTime(c.at + c.disputeWindow + 1n)} ` +
        `(the verdict, then its ${window} dispute window)`
      : `withdrawable after settlement: the job's verdict after step ${c.totalSteps}, then its ${window} dispute window`;
  return (
    `checkpoint at step ${c.step} accepted: credited ${formatUsdc(c.amount)} ` +
    `(total ${formatUsdc(c.total)} on job ${c.jobId}); ${when}`
  );
}

/** The verdict landed: from when (`from`, Unix seconds: sdk/rules/settleTiming.ts) the job's earnings are withdrawable, and how. */
export function verdictLine(jobId: bigint, total: bigint, from: bigint, withdraw: string): string {
  return (
    `job ${jobId}'s verdict is in: your ${formatUsdc(total)} on it is withdrawable from ${formatTime(from)}, ` +
    `once the job is settled (the finalizer keeper settles it; anyone may: gpuchain settle ${jobId}); then run: ${withdraw}`
  );
}

/** The job settled: the earnings are claimable now. */
export function settledLine(jobId: bigint, total: bigint, withdraw: string): string {
  return `job ${jobId} settled: your ${formatUsdc(total)} on it is withdrawable now: ${withdraw}`;
}

/** The dispute was upheld or a fault slashed: what was credited on the job is void. */
export function voidedLine(jobId: bigint, why: string): string {
  return `job ${jobId}: your earnings on it are void (${why})`;
}

export interface EarningsWatchOptions {
  protocol: Protocol;
  me: string;
  logger: Logger;
  signal: AbortSignal;
  intervalMs: number;
  /** The command that withdraws (absolute paths: it works from any folder). */
  withdraw: string;
}

/** The escrow events read: a provider's credits and slashes, and each job's verdict, settlement and dispute. */
const WATCHED = ["CheckpointAccepted", "VerdictSubmitted", "JobSettled", "DisputeResolved", "ProviderSlashed"];

interface Said {
  eventName: string;
  args: Result;
  blockNumber: number;
  index: number;
}

/**
 * Reads the escrow's events from the head at its start on, every `intervalMs` until the signal, and says each
 * credit and each change in when it is withdrawable. A failed read is retried at the next tick (it says nothing
 * twice: the cursor moves only past what it has said).
 */
export class EarningsWatch {
  /** Jobs this agent was credited on while it watched, with the latest total the chain held for it. */
  readonly jobs = new Map<bigint, bigint>();
  private from = -1;
  private readonly jobFacts = new Map<bigint, { totalSteps: number; disputeWindow: bigint }>();

  readonly o: EarningsWatchOptions;

  constructor(o: EarningsWatchOptions) {
    this.o = o;
  }

  /** Until the signal: one `poll` per interval (its errors logged once each, at debug level: the next retries). */
  async run(): Promise<void> {
    const provider = this.o.protocol.escrow.runner?.provider;
    if (!provider) return;
    while (!this.o.signal.aborted) {
      try {
        if (this.from < 0) this.from = (await provider.getBlockNumber()) + 1;
        await this.poll();
      } catch (err) {
        this.o.logger.log("debug", "earnings read failed; retried", {
          error: err instanceof Error ? err.message : String(err),
        });
      }
      await sleep(this.o.intervalMs, this.o.signal).catch(() => undefined);
    }
  }

  /** Reads the events from the cursor to the head and says what they mean for this provider. */
  async poll(): Promise<void> {
    const { escrow } = this.o.protocol;
    const provider = escrow.runner!.provider!;
    const head = await provider.getBlockNumber();
    if (this.from < 0) this.from = head + 1;
    if (head < this.from) return;
    // One read per tick for every event that matters (a public RPC counts requests).
    const raw = await provider.getLogs({
      address: String(escrow.target),
      topics: eventTopics(escrow.interface, WATCHED),
      fromBlock: this.from,
      toBlock: head,
    });
    const me = this.o.me.toLowerCase();
    const logs: Said[] = [];
    for (const l of raw) {
      const parsed = escrow.interface.parseLog(l);
      if (!parsed) continue;
      const about = parsed.args.provider as string | undefined;
      if (about !== undefined && about.toLowerCase() !== me) continue; // another provider's credit or slash
      logs.push({ eventName: parsed.name, args: parsed.args, blockNumber: l.blockNumber, index: l.index });
    }
    logs.sort((a, b) => a.blockNumber - b.blockNumber || a.index - b.index);
    for (const e of logs) await this.say(e);
    this.from = head + 1;
  }

  private async say(e: Said): Promise<void> {
    const { escrow } = this.o.protocol;
    const jobId = BigInt(e.args.jobId);
    const fields = { job: jobId.toString(), block: e.blockNumber };
    switch (e.eventName) {
      case "CheckpointAccepted": {
        const facts = await this.factsOf(jobId);
        const [total, block] = await Promise.all([
          escrow.earningsOf(jobId, this.o.me, { blockTag: e.blockNumber }) as Promise<bigint>,
          escrow.runner!.provider!.getBlock(e.blockNumber),
        ]);
        this.jobs.set(jobId, total);
        const credited: Credited = {
          jobId,
          step: Number(e.args.step),
          amount: BigInt(e.args.amount),
          total,
          at: BigInt(block?.timestamp ?? Math.floor(Date.now() / 1000)),
          ...facts,
        };
        this.o.logger.info(creditedLine(credited), {
          ...fields,
          step: credited.step,
          credited: formatUsdc(credited.amount),
          total: formatUsdc(total),
        });
        return;
      }
      case "VerdictSubmitted": {
        const total = this.jobs.get(jobId);
        if (!total) return;
        const { disputeWindow } = await this.factsOf(jobId);
        const deadline = BigInt(e.args.disputeDeadline);
        const timing = settleTiming({
          status: "DisputeWindow",
          verdictAt: deadline - disputeWindow,
          disputeWindow,
          disputeOpenedAt: 0n,
          arbiterTimeout: 0n,
        });
        const from = timing.kind === "at" ? timing.from : deadline + 1n;
        this.o.logger.info(verdictLine(jobId, total, from, this.o.withdraw), {
          ...fields,
          withdrawableFrom: formatTime(from),
        });
        return;
      }
      case "JobSettled": {
        const total = this.jobs.get(jobId);
        if (!total) return;
        // Read at the settling block: what is claimable then (an upheld dispute voided it: nothing to say).
        const claimable = (await escrow.earningsOf(jobId, this.o.me, { blockTag: e.blockNumber })) as bigint;
        if (claimable === 0n) return;
        this.o.logger.info(settledLine(jobId, claimable, this.o.withdraw), fields);
        return;
      }
      case "DisputeResolved": {
        if (!this.jobs.get(jobId) || !e.args.upheld) return;
        this.jobs.set(jobId, 0n);
        this.o.logger.warn(voidedLine(jobId, "the arbiter upheld the client's dispute"), fields);
        return;
      }
      case "ProviderSlashed": {
        this.jobs.set(jobId, 0n);
        this.o.logger.warn(voidedLine(jobId, `a verifier proved a fault at step ${e.args.faultStep}`), fields);
        return;
      }
    }
  }

  private async factsOf(jobId: bigint): Promise<{ totalSteps: number; disputeWindow: bigint }> {
    let f = this.jobFacts.get(jobId);
    if (!f) {
      const j = await this.o.protocol.escrow.jobOf(jobId);
      f = { totalSteps: Number(j.totalSteps), disputeWindow: BigInt(j.disputeWindow) };
      this.jobFacts.set(jobId, f);
    }
    return f;
  }
}
