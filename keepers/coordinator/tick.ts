/**
 * The coordinator keeper: receives heartbeats over HTTP, and each tick rebuilds the Open and Running jobs and the
 * registered providers from the chain, decides (decide.ts, pure), and sends unassign / assign, each on its own.
 */
import type { Contract } from "ethers";
import { isTraining, isTrainingOver, jobIds, readJob } from "../../sdk/job.ts";
import type { Logger } from "../../sdk/log.ts";
import { runLoop } from "../../sdk/runner.ts";
import { changeLogger, execute, mapLimit, read, scanEvents, type KeeperContext, type Outcome } from "../chain.ts";
import { startJsonServer } from "../http.ts";
import { HeartbeatView } from "./heartbeatView.ts";
import type { CoordinatorConfig } from "./config.ts";
import { memoryNeed } from "./config.ts";
import {
  busyProviders,
  exclusionOf,
  jobEpochKey,
  needsProvider,
  planCoordinator,
  type CoordinatorJob,
  type CoordinatorView,
  type Decision,
  type ProviderView,
} from "./decide.ts";
import { HeartbeatBook } from "./heartbeats.ts";
import { isProvenProfile, loadTemplate, UnknownTemplateError } from "../../workloads/index.ts";

/**
 * Issue 12's safety net: a template this node knows goes only to providers whose reported arithmetic profile is
 * proven to give its bits. A template it does not know is not replayed by verifiers built from this code either.
 */
function profileProven(templateId: string, profile: string | undefined): boolean {
  try {
    return isProvenProfile(loadTemplate(templateId), profile);
  } catch (e) {
    if (e instanceof UnknownTemplateError) return true;
    throw e;
  }
}

export interface CoordinatorTickReport {
  decisions: Decision[];
  sent: { decision: Decision; outcome: Outcome }[];
}

/** The provider changed its offer (deactivated, repriced) or got fenced between our read and our send. */
const ASSIGN_RACES = ["JobEscrowProviderInactive", "JobEscrowProviderFenced", "JobEscrowPriceAboveMax", "JobEscrowBudgetShort"];
/** Without the coordinator role: the provider extended its lease between our read and our send. */
const UNASSIGN_RACES = ["JobEscrowLeaseActive"];

export class Coordinator {
  /** Heartbeats received (served by `runCoordinator` on POST /heartbeat). */
  readonly book: HeartbeatBook;
  /** When each Running `${jobId}:${epoch}` was first seen (or assigned by us). */
  readonly watchStart = new Map<string, number>();
  private readonly ctx: KeeperContext;
  private readonly config: CoordinatorConfig;
  /** Jobs past Running: never read again. */
  private readonly done = new Set<bigint>();
  /** Registered providers, from ProviderRegistered events. */
  private readonly providers = new Set<string>();
  private scannedTo: number;
  private readonly quiet = changeLogger();

  constructor(ctx: KeeperContext, config: CoordinatorConfig) {
    this.ctx = ctx;
    this.config = config;
    this.book = new HeartbeatBook(ctx.chainId, config.maxClockSkewMs);
    this.scannedTo = config.fromBlock - 1;
  }

  /** One tick: read the chain, decide (pure), send each unassign / assign on its own. */
  async tick(): Promise<CoordinatorTickReport> {
    const view = await this.snapshot(this.ctx.nowMs());
    const decisions = planCoordinator(view);
    for (const d of decisions) {
      if (d.action === "assign" || d.action === "unassign") this.quiet.forget(`job ${d.jobId}`);
      else if (this.quiet.changed(`job ${d.jobId}`, `${d.epoch} ${d.action} ${d.reason}`)) this.ctx.logger.info("decision", fields(d));
    }
    const actions = decisions.filter((d) => d.action === "assign" || d.action === "unassign");
    const sent = await mapLimit(actions, 8, (decision) => this.send(decision, view.nowMs));
    return { decisions, sent };
  }

  private async send(decision: Decision, nowMs: number): Promise<{ decision: Decision; outcome: Outcome }> {
    const l = this.ctx.logger.child(fields(decision));
    l.info("decision");
    const call =
      decision.action === "assign"
        ? { method: "assign", args: [decision.jobId, decision.provider], races: ASSIGN_RACES }
        : { method: "unassign", args: [decision.jobId], races: UNASSIGN_RACES };
    const outcome = await execute(this.ctx, call, l);
    // Our own assignment: its timeout starts now, not at the next tick's first sight.
    if (decision.action === "assign" && outcome.kind === "confirmed") {
      this.watchStart.set(jobEpochKey(decision.jobId, decision.epoch + 1n), nowMs);
    }
    return { decision, outcome };
  }

  /** Reads everything a decision needs, at one block. */
  private async snapshot(nowMs: number): Promise<CoordinatorView> {
    const { ctx, config } = this;
    const [block, coordinator, jobCount] = await read(ctx, "chain head", () =>
      Promise.all([ctx.provider.getBlock("latest"), ctx.escrow.coordinator(), ctx.escrow.jobCount()]),
    );
    if (!block) throw new Error("no latest block");
    const jobs = await this.readJobs(block.number, jobCount);
    const providers = await this.readProviders(block.number);
    this.trackWatchStart(jobs, nowMs);
    this.book.prune(nowMs, Math.max(60_000, 10 * config.heartbeatTimeoutMs));
    const view: CoordinatorView = {
      nowMs,
      chainTime: BigInt(block.timestamp),
      timeoutMs: config.heartbeatTimeoutMs,
      startGraceMs: config.startGraceMs,
      isCoordinator: ctx.address ? ctx.address.toLowerCase() === coordinator.toLowerCase() : ctx.dryRun,
      jobs,
      providers,
      lastBeat: this.book.lastBeat,
      lastJobBeat: this.book.lastJobBeat,
      watchStart: this.watchStart,
      fenced: new Map(),
      memoryNeedMiB: memoryNeed(config),
      profileProven,
    };
    await this.readFenced(view, block.number);
    return view;
  }

  /** The timeout of a Running (job, epoch) runs from its first sight until its first beat. */
  private trackWatchStart(jobs: CoordinatorJob[], nowMs: number): void {
    const running = new Set(jobs.filter((j) => j.status === "Running").map((j) => jobEpochKey(j.jobId, j.epoch)));
    for (const key of running) if (!this.watchStart.has(key)) this.watchStart.set(key, nowMs);
    for (const key of this.watchStart.keys()) if (!running.has(key)) this.watchStart.delete(key);
  }

  private async readJobs(blockTag: number, jobCount: bigint): Promise<CoordinatorJob[]> {
    const { ctx } = this;
    const ids = jobIds(jobCount, (id) => this.done.has(id));
    const views = await mapLimit(ids, 8, (id) => read(ctx, `job ${id}`, () => readJob(ctx.escrow, id, blockTag)));
    // A job past training never becomes Open or Running again: never read it again.
    for (const v of views) if (isTrainingOver(v.status)) this.done.add(v.jobId);
    return views.filter((v) => isTraining(v.status));
  }

  private async readProviders(blockTag: number): Promise<ProviderView[]> {
    const { ctx } = this;
    if (blockTag > this.scannedTo) {
      const registry = ctx.registry as unknown as Contract;
      const logs = await scanEvents(ctx, registry, registry.filters.ProviderRegistered(), this.scannedTo + 1, blockTag);
      for (const l of logs) this.providers.add(l.args.provider as string);
      this.scannedTo = blockTag;
    }
    return mapLimit([...this.providers], 8, (address) =>
      read(ctx, `provider ${address}`, async () => {
        const [price, memoryMiB, active] = await ctx.registry.quote(address, { blockTag });
        return { address, pricePerStep: price, memoryMiB: Number(memoryMiB), active, registered: true };
      }),
    );
  }

  /** `isFenced` for the candidates that pass every other rule (the only ones it can change). */
  private async readFenced(view: CoordinatorView, blockTag: number): Promise<void> {
    const busy = busyProviders(view.jobs);
    const pairs = view.jobs
      .filter(needsProvider)
      .flatMap((job) => view.providers.filter((p) => !exclusionOf(job, p, view, busy)).map((p) => ({ job, p })));
    const flags = await mapLimit(pairs, 8, ({ job, p }) =>
      read(this.ctx, "isFenced", () => this.ctx.escrow.isFenced(job.jobId, p.address, { blockTag })),
    );
    pairs.forEach(({ job, p }, i) => {
      if (!flags[i]) return;
      const key = job.jobId.toString();
      if (!view.fenced.has(key)) view.fenced.set(key, new Set());
      view.fenced.get(key)!.add(p.address.toLowerCase());
    });
  }
}

export function createCoordinator(ctx: KeeperContext, config: CoordinatorConfig): Coordinator {
  return new Coordinator(ctx, config);
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
  const tick = async () => void (await coordinator.tick());
  const run = { name: "coordinator", tick, intervalMs: config.intervalMs, once: config.once, signal, logger };
  // One tick has no time to hear heartbeats: --once only unassigns lapsed leases (and logs its decisions).
  if (config.once) return runLoop(run);
  const beats = new HeartbeatView(); // read-only, for dashboards (GET /heartbeats)
  const server = await startJsonServer({
    host: config.host,
    port: config.port,
    logger,
    routes: {
      "POST /heartbeat": beats.tap(coordinator.book.handler(ctx.nowMs), ctx.nowMs),
      "GET /heartbeats": beats.route(ctx.nowMs),
      "GET /health": () => ({ status: 200, body: { ok: true } }),
    },
  });
  try {
    return await runLoop(run);
  } finally {
    await server.close();
  }
}
