/**
 * The finalizer keeper: on a node-cron schedule, rebuilds from the chain which jobs can be settled and which
 * providers have unclaimed earnings (providers from CheckpointAccepted events), and sends settle / claimEarnings.
 * Each run reads (through Multicall3) only the jobs whose status may have changed: named by an escrow event since
 * the last run, created since, past the dispute or arbiter deadline their events announced, or acted on last run.
 * Runs never overlap (sdk/runner.ts: node-cron's noOverlap plus its own guard).
 */
import type { Contract, Log } from "ethers";
import { statusName } from "../../sdk/job.ts";
import { batchReader, valueOf } from "../../sdk/multicall.ts";
import { execute, mapLimit, read, type KeeperContext, type Outcome } from "../chain.ts";
import { runTicks } from "../keeper.ts";
import { BATCH_MIN, sendBatched, shouldBatch } from "./batch.ts";
import type { FinalizerConfig } from "./config.ts";
import { earningsMatter, nothingLeftToDo, planFinalizer, type FinalizerAction, type FinalizerJob } from "./decide.ts";

export interface FinalizerTickReport {
  plan: FinalizerAction[][];
  sent: { action: FinalizerAction; outcome: Outcome }[];
  /** Jobs whose status this run read (the others cannot have changed since they were last read). */
  read: bigint[];
}

export function createFinalizer(ctx: KeeperContext, config: Pick<FinalizerConfig, "fromBlock">) {
  const log = ctx.logger;
  const escrow = ctx.escrow as unknown as Contract;
  const batch = ctx.batch ?? batchReader(ctx.provider);
  const finished = new Set<bigint>();
  const providersOf = new Map<bigint, Set<string>>();
  /** Chain time after which a job's status may change without an event (dispute window, arbiter timeout). */
  const deadlines = new Map<bigint, bigint>();
  /** Jobs acted on last tick: read again whatever happened to the transactions. */
  let recheck = new Set<bigint>();
  let knownJobCount = 0n;
  let scannedTo = config.fromBlock - 1;

  /** Folds the escrow's logs since the last tick; returns the jobs they name. */
  async function scan(toBlock: number): Promise<Set<bigint>> {
    const named = new Set<bigint>();
    if (toBlock <= scannedTo) return named;
    const logs = await escrowLogs(ctx, escrow, scannedTo + 1, toBlock);
    for (const l of logs) {
      const parsed = escrow.interface.parseLog(l);
      const jobId = parsed?.args.jobId as bigint | undefined;
      if (!parsed || typeof jobId !== "bigint") continue;
      named.add(jobId);
      if (parsed.name === "CheckpointAccepted") {
        if (!providersOf.has(jobId)) providersOf.set(jobId, new Set());
        providersOf.get(jobId)!.add(parsed.args.provider as string);
      }
      if (parsed.name === "VerdictSubmitted") deadlines.set(jobId, parsed.args.disputeDeadline as bigint);
      if (parsed.name === "DisputeOpened") deadlines.set(jobId, parsed.args.arbiterDeadline as bigint);
    }
    scannedTo = toBlock;
    return named;
  }

  /** Jobs whose status may have changed: named by an event, new, past a deadline, or acted on last tick. */
  async function changedJobs(block: { number: number; timestamp: number }, jobCount: bigint): Promise<bigint[]> {
    const ids = await scan(block.number);
    for (let id = knownJobCount + 1n; id <= jobCount; id++) ids.add(id);
    if (jobCount > knownJobCount) knownJobCount = jobCount;
    for (const [id, deadline] of deadlines) if (BigInt(block.timestamp) > deadline) ids.add(id);
    for (const id of recheck) ids.add(id);
    return [...ids].filter((id) => !finished.has(id) && id <= jobCount).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }

  async function snapshot(): Promise<FinalizerJob[]> {
    const block = await read(ctx, "chain head", () => ctx.provider.getBlock("latest"));
    if (!block) throw new Error("no latest block");
    const blockTag = block.number;
    const jobCount = await read(ctx, "jobCount", () => ctx.escrow.jobCount({ blockTag }));
    const ids = await changedJobs(block, jobCount);
    const target = String(escrow.target);
    const statusCalls = ids.map((id) => ({ target, iface: escrow.interface, fn: "statusOf", args: [id] }));
    const statuses = await read(ctx, `${ids.length} statuses`, () => batch.read(statusCalls, blockTag));
    const jobs = ids.map((jobId, i) => {
      const status = statusName(valueOf(statuses[i])[0] as bigint);
      const providers = earningsMatter(status) ? [...(providersOf.get(jobId) ?? [])] : [];
      return { jobId, status, providers };
    });
    const claims = jobs.flatMap((j) => j.providers.map((p) => ({ jobId: j.jobId, p })));
    const earningCalls = claims.map(({ jobId, p }) => ({
      target,
      iface: escrow.interface,
      fn: "earningsOf",
      args: [jobId, p],
    }));
    const amounts = await read(ctx, `${claims.length} earnings`, () => batch.read(earningCalls, blockTag));
    const amountOf = new Map(claims.map(({ jobId, p }, i) => [`${jobId}:${p}`, valueOf(amounts[i])[0] as bigint]));
    const out: FinalizerJob[] = jobs.map(({ jobId, status, providers }) => ({
      jobId,
      status,
      earnings: providers.map((provider) => ({ provider, amount: amountOf.get(`${jobId}:${provider}`)! })),
    }));
    for (const j of out) {
      // A dispute window or arbiter deadline we did not see (before --from-block): look at it every tick.
      if ((j.status === "DisputeWindow" || j.status === "Disputed") && !deadlines.has(j.jobId))
        deadlines.set(j.jobId, 0n);
      if (nothingLeftToDo(j)) {
        finished.add(j.jobId);
        deadlines.delete(j.jobId);
        providersOf.delete(j.jobId);
      }
    }
    return out;
  }

  async function tick(): Promise<FinalizerTickReport> {
    const jobs = await snapshot();
    const plan = planFinalizer(jobs);
    recheck = new Set(plan.map((actions) => actions[0].jobId));
    const settles = plan.flatMap((actions) => actions.filter((a) => a.method === "settle"));
    if (await shouldBatch(ctx, settles))
      return { plan, sent: await sendInBulk(plan, settles), read: jobs.map((j) => j.jobId) };
    const perJob = await mapLimit(plan, 4, async (actions) => {
      const results: { action: FinalizerAction; outcome: Outcome }[] = [];
      for (const action of actions) {
        const l = log.child({
          job: action.jobId,
          action: action.method,
          ...(action.method === "claimEarnings" ? { provider: action.provider, amount: action.amount } : {}),
          reason: action.reason,
        });
        l.info("decision");
        const outcome = await execute(ctx, { method: action.method, args: action.args }, l);
        results.push({ action, outcome });
        // Claims need the job settled; if settling failed for real, they would only revert.
        if (action.method === "settle" && (outcome.kind === "failed" || outcome.kind === "retry-later")) break;
      }
      return results;
    });
    return { plan, sent: perJob.flat(), read: jobs.map((j) => j.jobId) };
  }

  /** Many jobs to settle: every settle in Multicall3 batches, then the claims of the jobs that settled. */
  async function sendInBulk(plan: FinalizerAction[][], settles: FinalizerAction[]) {
    log.info("decision", {
      action: "settle",
      jobs: settles.length,
      reason: "many jobs settleable: batched through Multicall3",
    });
    const settled = await sendBatched(ctx, settles, log);
    const blocked = new Set(
      settled.filter((s) => s.outcome.kind === "failed" || s.outcome.kind === "retry-later").map((s) => s.action.jobId),
    );
    const claims = plan.flat().filter((a) => a.method === "claimEarnings" && !blocked.has(a.jobId));
    const claimed =
      claims.length >= BATCH_MIN ? await sendBatched(ctx, claims, log) : await mapLimit(claims, 4, (a) => sendOne(a));
    return [...settled, ...claimed];
  }

  async function sendOne(action: FinalizerAction) {
    const l = log.child({ job: action.jobId, action: action.method, reason: action.reason });
    return { action, outcome: await execute(ctx, { method: action.method, args: action.args }, l) };
  }

  return { tick };
}

/** Runs the finalizer on `config.cron` until `signal` fires (or once). Resolves with the exit code. */
export function runFinalizer(ctx: KeeperContext, config: FinalizerConfig, signal: AbortSignal): Promise<number> {
  const finalizer = createFinalizer(ctx, config);
  return runTicks("finalizer", ctx, config, async () => void (await finalizer.tick()), signal);
}

/** Every escrow log between two blocks (inclusive), in chunks that public RPCs accept. */
async function escrowLogs(ctx: KeeperContext, escrow: Contract, fromBlock: number, toBlock: number, chunk = 10_000) {
  const address = String(escrow.target);
  const out: Log[] = [];
  for (let start = fromBlock; start <= toBlock; start += chunk) {
    const end = Math.min(toBlock, start + chunk - 1);
    out.push(...(await read(ctx, "getLogs", () => ctx.provider.getLogs({ address, fromBlock: start, toBlock: end }))));
  }
  return out;
}
