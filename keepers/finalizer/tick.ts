/**
 * The finalizer keeper: on a node-cron schedule, rebuilds from the chain which jobs can be settled and which
 * providers have unclaimed earnings (providers from CheckpointAccepted events), and sends settle / claimEarnings.
 * Runs never overlap: node-cron's noOverlap plus our own guard.
 */
import type { Contract } from "ethers";
import { schedule } from "node-cron";
import { JOB_STATUS } from "../../sdk/contracts.ts";
import type { Logger } from "../../sdk/log.ts";
import { execute, mapLimit, read, scanEvents, type KeeperContext, type Outcome } from "../chain.ts";
import { nonOverlapping } from "../runner.ts";
import type { FinalizerConfig } from "./config.ts";
import { earningsMatter, isFinished, planFinalizer, type FinalizerAction, type FinalizerJob } from "./decide.ts";

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
    const ids: bigint[] = [];
    for (let id = 1n; id <= jobCount; id++) if (!finished.has(id)) ids.push(id);
    const jobs = await mapLimit(ids, 8, (jobId) =>
      read(ctx, `job ${jobId}`, async () => {
        const status = JOB_STATUS[Number(await ctx.escrow.statusOf(jobId, { blockTag }))];
        const providers = earningsMatter(status) ? [...(providersOf.get(jobId) ?? [])] : [];
        const amounts = await Promise.all(providers.map((p) => ctx.escrow.earningsOf(jobId, p, { blockTag })));
        return { jobId, status, earnings: providers.map((provider, i) => ({ provider, amount: amounts[i] })) };
      }),
    );
    for (const j of jobs) if (isFinished(j)) finished.add(j.jobId);
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

/**
 * Runs the finalizer on `config.cron` until `signal` fires (or once). Resolves with the exit code.
 */
export async function runFinalizer(
  ctx: KeeperContext,
  config: FinalizerConfig,
  signal: AbortSignal,
  logger: Logger = ctx.logger,
): Promise<number> {
  const finalizer = createFinalizer(ctx, config);
  let failures = 0;
  const guarded = nonOverlapping(async () => {
    try {
      await finalizer.tick();
    } catch (err) {
      failures++;
      logger.error("tick failed", { keeper: "finalizer", error: (err as Error)?.message ?? String(err) });
    }
  });
  if (config.once) {
    await guarded.run();
    return failures > 0 ? 1 : 0;
  }
  logger.info("started", { keeper: "finalizer", cron: config.cron });
  const task = schedule(
    config.cron,
    async () => {
      if (guarded.busy()) logger.warn("previous run still going; skipped", { keeper: "finalizer" });
      await guarded.run();
    },
    {
      name: "gpuchain-finalizer",
      noOverlap: true,
      // node-cron's own messages (e.g. "execution blocked by overlap prevention") go to our log, as warnings.
      logger: {
        info: (m) => logger.info(String(m), { keeper: "finalizer", source: "node-cron" }),
        warn: (m) => logger.warn(String(m), { keeper: "finalizer", source: "node-cron" }),
        error: (m) => logger.error(String(m), { keeper: "finalizer", source: "node-cron" }),
        debug: () => {},
      },
    },
  );
  await new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    signal.addEventListener("abort", () => resolve(), { once: true });
  });
  await task.stop();
  await task.destroy();
  await guarded.idle();
  logger.info("stopped", { keeper: "finalizer" });
  return 0;
}
