/**
 * The finalizer keeper: on a node-cron schedule, rebuilds from the chain which jobs can be settled and which
 * providers have unclaimed earnings (providers from CheckpointAccepted events), and sends settle / claimEarnings.
 * Runs never overlap (sdk/runner.ts: node-cron's noOverlap plus its own guard).
 */
import type { Contract } from "ethers";
import { jobIds, statusName } from "../../sdk/job.ts";
import type { Logger } from "../../sdk/log.ts";
import { runLoop } from "../../sdk/runner.ts";
import { execute, mapLimit, read, scanEvents, type KeeperContext, type Outcome } from "../chain.ts";
import type { FinalizerConfig } from "./config.ts";
import { earningsMatter, nothingLeftToDo, planFinalizer, type FinalizerAction, type FinalizerJob } from "./decide.ts";

export interface FinalizerTickReport {
  plan: FinalizerAction[][];
  sent: { action: FinalizerAction; outcome: Outcome }[];
}

export function createFinalizer(ctx: KeeperContext, config: Pick<FinalizerConfig, "fromBlock">) {
  const log = ctx.logger;
  const finished = new Set<bigint>();
  const providersOf = new Map<bigint, Set<string>>();
  let scannedTo = config.fromBlock - 1;

  async function scanAccepted(toBlock: number): Promise<void> {
    if (toBlock <= scannedTo) return;
    const escrow = ctx.escrow as unknown as Contract;
    const logs = await scanEvents(ctx, escrow, escrow.filters.CheckpointAccepted(), scannedTo + 1, toBlock);
    for (const l of logs) {
      const jobId = l.args.jobId as bigint;
      if (!providersOf.has(jobId)) providersOf.set(jobId, new Set());
      providersOf.get(jobId)!.add(l.args.provider as string);
    }
    scannedTo = toBlock;
  }

  async function snapshot(): Promise<FinalizerJob[]> {
    const [blockTag, jobCount] = await read(ctx, "chain head", () =>
      Promise.all([ctx.provider.getBlockNumber(), ctx.escrow.jobCount()]),
    );
    await scanAccepted(blockTag);
    const ids = jobIds(jobCount, (id) => finished.has(id));
    const jobs = await mapLimit(ids, 8, (jobId) =>
      read(ctx, `job ${jobId}`, async () => {
        const status = statusName(await ctx.escrow.statusOf(jobId, { blockTag }));
        const providers = earningsMatter(status) ? [...(providersOf.get(jobId) ?? [])] : [];
        const amounts = await Promise.all(providers.map((p) => ctx.escrow.earningsOf(jobId, p, { blockTag })));
        return { jobId, status, earnings: providers.map((provider, i) => ({ provider, amount: amounts[i] })) };
      }),
    );
    for (const j of jobs) if (nothingLeftToDo(j)) finished.add(j.jobId);
    return jobs;
  }

  async function tick(): Promise<FinalizerTickReport> {
    const plan = planFinalizer(await snapshot());
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
    return { plan, sent: perJob.flat() };
  }

  return { tick };
}

/** Runs the finalizer on `config.cron` until `signal` fires (or once). Resolves with the exit code. */
export function runFinalizer(
  ctx: KeeperContext,
  config: FinalizerConfig,
  signal: AbortSignal,
  logger: Logger = ctx.logger,
): Promise<number> {
  const finalizer = createFinalizer(ctx, config);
  const tick = async () => void (await finalizer.tick());
  return runLoop({ name: "finalizer", tick, cron: config.cron, once: config.once, signal, logger });
}
