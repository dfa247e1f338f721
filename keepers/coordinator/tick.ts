/**
 * The coordinator keeper: receives heartbeats over HTTP, and each tick rebuilds the Open and Running jobs and the
 * registered providers from the chain, decides (decide.ts, pure), and sends unassign / assign, each on its own.
 */
import type { Contract } from "ethers";
import { JOB_STATUS } from "../../sdk/contracts.ts";
import type { Logger } from "../../sdk/log.ts";
import { changeLogger, execute, mapLimit, read, scanEvents, type KeeperContext, type Outcome } from "../chain.ts";
import { startJsonServer } from "../http.ts";
import { runLoop } from "../runner.ts";
import type { CoordinatorConfig } from "./config.ts";
import { memoryNeed } from "./config.ts";
import {
  busyProviders,
  exclusionOf,
  jobEpochKey,
  needsProvider,
  planCoordinator,
  type CoordinatorView,
  type Decision,
  type JobView,
  type ProviderView,
} from "./decide.ts";
import { HeartbeatBook } from "./heartbeats.ts";

export interface CoordinatorTickReport {
  decisions: Decision[];
  sent: { decision: Decision; outcome: Outcome }[];
}

/** The provider changed its offer (deactivated, repriced) or got fenced between our read and our send. */
const ASSIGN_RACES = ["JobEscrowProviderInactive", "JobEscrowProviderFenced", "JobEscrowPriceAboveMax", "JobEscrowBudgetShort"];
/** Without the coordinator role: the provider extended its lease between our read and our send. */
const UNASSIGN_RACES = ["JobEscrowLeaseActive"];

/** Statuses a job never leaves for Open or Running again: the coordinator stops reading those jobs. */
const DONE = new Set(["DisputeWindow", "Settleable", "Disputed", "ArbiterTimedOut", "Settled", "Cancelled"]);

export function createCoordinator(ctx: KeeperContext, config: CoordinatorConfig) {
  const book = new HeartbeatBook(ctx.chainId, config.maxClockSkewMs);
  const watchStart = new Map<string, number>();
  const done = new Set<bigint>();
  const providers = new Set<string>();
  let scannedTo = config.fromBlock - 1;
  const quiet = changeLogger();
  const log = ctx.logger;

  async function readJobs(blockTag: number, jobCount: bigint): Promise<JobView[]> {
    const ids: bigint[] = [];
    for (let id = 1n; id <= jobCount; id++) if (!done.has(id)) ids.push(id);
    const views = await mapLimit(ids, 8, (id) =>
      read(ctx, `job ${id}`, async () => {
        const [status, job] = await Promise.all([
          ctx.escrow.statusOf(id, { blockTag }),
          ctx.escrow.jobOf(id, { blockTag }),
        ]);
        return {
          jobId: id,
          status: JOB_STATUS[Number(status)],
          epoch: job.epoch,
          templateId: job.templateId,
          totalSteps: Number(job.totalSteps),
          acceptedStep: Number(job.acceptedStep),
          pendingStep: Number(job.pendingStep),
          maxPricePerStep: job.maxPricePerStep,
          budget: job.budget,
          paid: job.paid,
          provider: job.provider,
          leaseExpiresAt: job.leaseExpiresAt,
        } satisfies JobView;
      }),
    );
    for (const v of views) if (DONE.has(v.status)) done.add(v.jobId);
    return views.filter((v) => v.status === "Open" || v.status === "Running");
  }

  async function readProviders(blockTag: number): Promise<ProviderView[]> {
    if (blockTag > scannedTo) {
      const registry = ctx.registry as unknown as Contract;
      const logs = await scanEvents(ctx, registry, registry.filters.ProviderRegistered(), scannedTo + 1, blockTag);
      for (const l of logs) providers.add(l.args.provider as string);
      scannedTo = blockTag;
    }
    return mapLimit([...providers], 8, (address) =>
      read(ctx, `provider ${address}`, async () => {
        const [price, memoryMiB, active] = await ctx.registry.quote(address, { blockTag });
        return { address, pricePerStep: price, memoryMiB: Number(memoryMiB), active, registered: true };
      }),
    );
  }

  /** Reads everything a decision needs, at one block. */
  async function snapshot(nowMs: number): Promise<CoordinatorView> {
    const [block, coordinator, jobCount] = await read(ctx, "chain head", () =>
      Promise.all([ctx.provider.getBlock("latest"), ctx.escrow.coordinator(), ctx.escrow.jobCount()]),
    );
    if (!block) throw new Error("no latest block");
    const jobs = await readJobs(block.number, jobCount);
    const providerViews = await readProviders(block.number);
    const isCoordinator = ctx.address ? ctx.address.toLowerCase() === coordinator.toLowerCase() : ctx.dryRun;

    // The timeout of a Running (job, epoch) runs from its first sight until its first beat.
    const running = new Set(jobs.filter((j) => j.status === "Running").map((j) => jobEpochKey(j.jobId, j.epoch)));
    for (const key of running) if (!watchStart.has(key)) watchStart.set(key, nowMs);
    for (const key of watchStart.keys()) if (!running.has(key)) watchStart.delete(key);
    book.prune(nowMs, Math.max(60_000, 10 * config.heartbeatTimeoutMs));

    const view: CoordinatorView = {
      nowMs,
      chainTime: BigInt(block.timestamp),
      timeoutMs: config.heartbeatTimeoutMs,
      isCoordinator,
      jobs,
      providers: providerViews,
      lastBeat: book.lastBeat,
      lastJobBeat: book.lastJobBeat,
      watchStart,
      fenced: new Map(),
      memoryNeedMiB: memoryNeed(config),
    };
    await readFenced(view, block.number);
    return view;
  }

  /** `isFenced` for the candidates that pass every other rule (the only ones it can change). */
  async function readFenced(view: CoordinatorView, blockTag: number): Promise<void> {
    const busy = busyProviders(view.jobs);
    const pairs = view.jobs
      .filter(needsProvider)
      .flatMap((job) => view.providers.filter((p) => !exclusionOf(job, p, view, busy)).map((p) => ({ job, p })));
    const flags = await mapLimit(pairs, 8, ({ job, p }) =>
      read(ctx, "isFenced", () => ctx.escrow.isFenced(job.jobId, p.address, { blockTag })),
    );
    pairs.forEach(({ job, p }, i) => {
      if (!flags[i]) return;
      const key = job.jobId.toString();
      if (!view.fenced.has(key)) view.fenced.set(key, new Set());
      view.fenced.get(key)!.add(p.address.toLowerCase());
    });
  }

  async function tick(): Promise<CoordinatorTickReport> {
    const view = await snapshot(ctx.nowMs());
    const decisions = planCoordinator(view);
    const actions = decisions.filter((d) => d.action === "assign" || d.action === "unassign");
    for (const d of decisions) {
      if (d.action === "keep" || d.action === "wait") {
        if (quiet.changed(`job ${d.jobId}`, `${d.epoch} ${d.action} ${d.reason}`)) log.info("decision", fields(d));
      } else {
        quiet.forget(`job ${d.jobId}`);
      }
    }
    const sent = await mapLimit(actions, 8, async (decision) => {
      const l = log.child(fields(decision));
      l.info("decision");
      const call =
        decision.action === "assign"
          ? { method: "assign", args: [decision.jobId, decision.provider], races: ASSIGN_RACES }
          : { method: "unassign", args: [decision.jobId], races: UNASSIGN_RACES };
      const outcome = await execute(ctx, call, l);
      // Our own assignment: its timeout starts now, not at the next tick's first sight.
      if (decision.action === "assign" && outcome.kind === "confirmed") {
        watchStart.set(jobEpochKey(decision.jobId, decision.epoch + 1n), view.nowMs);
      }
      return { decision, outcome };
    });
    return { decisions, sent };
  }

  return { book, tick, watchStart };
}

function fields(d: Decision): Record<string, unknown> {
  return {
    job: d.jobId,
    epoch: d.epoch,
    step: d.step,
    action: d.action,
    ...(d.provider && d.action !== "wait" ? { provider: d.provider } : {}),
    reason: d.reason,
  };
}

/** Serves `POST /heartbeat` and runs the tick loop until `signal` fires (or once). */
export async function runCoordinator(
  ctx: KeeperContext,
  config: CoordinatorConfig,
  signal: AbortSignal,
  logger: Logger = ctx.logger,
): Promise<number> {
  const coordinator = createCoordinator(ctx, config);
  // One tick has no time to hear heartbeats: --once only unassigns lapsed leases (and logs its decisions).
  if (config.once) {
    return runLoop({ name: "coordinator", tick: async () => void (await coordinator.tick()), intervalMs: 0, once: true, signal, logger });
  }
  const server = await startJsonServer({
    host: config.host,
    port: config.port,
    logger,
    routes: {
      "POST /heartbeat": coordinator.book.handler(ctx.nowMs),
      "GET /health": () => ({ status: 200, body: { ok: true } }),
    },
  });
  try {
    return await runLoop({
      name: "coordinator",
      tick: async () => void (await coordinator.tick()),
      intervalMs: config.intervalMs,
      once: config.once,
      signal,
      logger,
    });
  } finally {
    await server.close();
  }
}
