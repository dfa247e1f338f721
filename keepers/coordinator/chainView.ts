/**
 * The coordinator's picture of the chain, kept up to date from events instead of re-read every tick: each tick
 * fetches the escrow's and the registry's logs since the last tick (one getLogs per 10 000 blocks), re-reads only
 * the jobs and providers those logs name (and jobs created since), batched through Multicall3, and learns fencing
 * from CheckpointRefused. A tick with nothing new costs a handful of requests whatever the number of jobs.
 *
 * Why it is enough: every escrow function that changes a job emits an event naming the job, and a job's Open or
 * Running status is never derived from the clock (only Settleable and ArbiterTimedOut are, which the coordinator
 * never acts on); the lease's lapse is compared with chain time in decide.ts from the stored `leaseExpiresAt`.
 */
import type { Contract, Interface, Log } from "ethers";
import { isTraining, isTrainingOver, readJobsBatched } from "../../sdk/job.ts";
import { batchReader, valueOf, type BatchReader } from "../../sdk/multicall.ts";
import { read, type KeeperContext } from "../chain.ts";
import type { CoordinatorJob, ProviderView } from "./decide.ts";
import { TrackRecords } from "./trackRecord.ts";

const LOG_CHUNK = 10_000;

export interface ChainViewStats {
  jobsRead: number;
  providersRead: number;
  logs: number;
}

export class CoordinatorChainView {
  /** Open and Running jobs, as last read. */
  readonly jobs = new Map<bigint, CoordinatorJob>();
  /** Registered providers (lower-case → view), from ProviderRegistered and re-read on their events. */
  readonly providers = new Map<string, ProviderView>();
  /** Addresses (as emitted) of every registered provider; the heartbeat check consults it. */
  readonly registered = new Set<string>();
  /** Providers fenced per job id (string, lower-case addresses), from CheckpointRefused; training jobs only. */
  readonly fenced = new Map<string, Set<string>>();
  /** Accepted steps and idle unassignments per provider, from escrow events (trackRecord.ts). */
  readonly history = new TrackRecords();
  /** Jobs past training: never read again. */
  private readonly done = new Set<bigint>();
  private readonly ctx: KeeperContext;
  private readonly batch: BatchReader;
  private readonly escrowIface: Interface;
  private readonly registryIface: Interface;
  /** The registry's `minStake` (immutable: read once). */
  minStake: bigint | undefined;
  private knownJobCount = 0n;
  private scannedTo: number;
  last: ChainViewStats = { jobsRead: 0, providersRead: 0, logs: 0 };

  constructor(ctx: KeeperContext, fromBlock: number) {
    this.ctx = ctx;
    this.batch = ctx.batch ?? batchReader(ctx.provider);
    this.escrowIface = (ctx.escrow as unknown as Contract).interface;
    this.registryIface = (ctx.registry as unknown as Contract).interface;
    this.scannedTo = fromBlock - 1;
  }

  /** The coordinator role and the job count at `block` (and, the first time, the registry's minStake), in one request. */
  async head(block: number): Promise<{ coordinator: string; jobCount: bigint }> {
    const escrow = this.escrowAddress();
    const calls = [
      { target: escrow, iface: this.escrowIface, fn: "coordinator", args: [] },
      { target: escrow, iface: this.escrowIface, fn: "jobCount", args: [] },
    ];
    if (this.minStake === undefined) {
      calls.push({ target: this.registryAddress(), iface: this.registryIface, fn: "minStake", args: [] });
    }
    const [c, n, m] = await read(this.ctx, "coordinator, jobCount", () => this.batch.read(calls, block));
    if (m) this.minStake = valueOf(m)[0] as bigint;
    return { coordinator: valueOf(c)[0] as string, jobCount: valueOf(n)[0] as bigint };
  }

  /** Brings jobs, providers and fencing up to `block` (logs since the last call, then the reads they call for). */
  async refresh(block: number, jobCount: bigint): Promise<void> {
    const dirtyJobs = new Set<bigint>();
    const dirtyProviders = new Set<string>();
    const logs = block > this.scannedTo ? await this.logsSince(block) : [];
    for (const log of logs) this.apply(log, dirtyJobs, dirtyProviders);
    await this.history.resolve((n) => this.blockTime(n));
    this.scannedTo = Math.max(this.scannedTo, block);
    for (let id = this.knownJobCount + 1n; id <= jobCount; id++) dirtyJobs.add(id);
    if (jobCount > this.knownJobCount) this.knownJobCount = jobCount;
    const ids = [...dirtyJobs].filter((id) => !this.done.has(id) && id <= jobCount).sort(byId);
    await this.readJobs(ids, block);
    await this.readProviders([...dirtyProviders], block);
    this.last = { jobsRead: ids.length, providersRead: dirtyProviders.size, logs: logs.length };
  }

  /** A fencing learned from an assign that reverted with JobEscrowProviderFenced (an event before `fromBlock`). */
  markFenced(jobId: bigint, provider: string): void {
    const key = jobId.toString();
    if (!this.fenced.has(key)) this.fenced.set(key, new Set());
    this.fenced.get(key)!.add(provider.toLowerCase());
  }

  private escrowAddress(): string {
    return String((this.ctx.escrow as unknown as { target: string }).target);
  }

  private registryAddress(): string {
    return String((this.ctx.registry as unknown as { target: string }).target);
  }

  private async logsSince(block: number): Promise<Log[]> {
    const address = [this.escrowAddress(), this.registryAddress()];
    const out: Log[] = [];
    for (let start = this.scannedTo + 1; start <= block; start += LOG_CHUNK) {
      const toBlock = Math.min(block, start + LOG_CHUNK - 1);
      out.push(
        ...(await read(this.ctx, "getLogs", () => this.ctx.provider.getLogs({ address, fromBlock: start, toBlock }))),
      );
    }
    return out;
  }

  private apply(log: Log, dirtyJobs: Set<bigint>, dirtyProviders: Set<string>): void {
    const fromEscrow = log.address.toLowerCase() === this.escrowAddress().toLowerCase();
    const parsed = (fromEscrow ? this.escrowIface : this.registryIface).parseLog(log);
    if (!parsed) return;
    const args = parsed.args as unknown as Record<string, unknown>;
    if (fromEscrow) {
      if (typeof args.jobId === "bigint") dirtyJobs.add(args.jobId);
      if (parsed.name === "CheckpointRefused") this.markFenced(args.jobId as bigint, args.provider as string);
      this.history.apply(parsed.name, args, log.blockNumber);
      return;
    }
    if (typeof args.provider !== "string") return;
    if (parsed.name === "ProviderRegistered") this.registered.add(args.provider);
    dirtyProviders.add(args.provider);
  }

  private async readJobs(ids: bigint[], block: number): Promise<void> {
    if (ids.length === 0) return;
    const src = { reader: this.batch, escrow: this.escrowAddress(), iface: this.escrowIface };
    const views = await read(this.ctx, `${ids.length} jobs`, () => readJobsBatched(src, ids, block));
    for (const v of views) {
      if (isTraining(v.status)) this.jobs.set(v.jobId, v);
      else this.jobs.delete(v.jobId);
      // A job past training never becomes Open or Running again: never read it again, forget its fencing.
      if (isTrainingOver(v.status)) {
        this.done.add(v.jobId);
        this.fenced.delete(v.jobId.toString());
        this.history.forgetJob(v.jobId);
      }
    }
  }

  private async readProviders(addresses: string[], block: number): Promise<void> {
    const known = addresses.filter((a) => this.registered.has(a));
    if (known.length === 0) return;
    const registry = this.registryAddress();
    // Two reads per provider: its offer and its stake (stake events name the provider, so both stay current).
    const calls = known.flatMap((a) => [
      { target: registry, iface: this.registryIface, fn: "quote", args: [a] },
      { target: registry, iface: this.registryIface, fn: "stakeOf", args: [a] },
    ]);
    const results = await read(this.ctx, `${known.length} providers`, () => this.batch.read(calls, block));
    known.forEach((address, i) => {
      const [price, memoryMiB, active] = valueOf(results[2 * i]) as unknown as [bigint, bigint, boolean];
      const [stake] = valueOf(results[2 * i + 1]) as unknown as [
        { deposited: bigint; locked: bigint; unbonding: bigint },
      ];
      const stakeFree = stake.deposited - stake.locked - stake.unbonding;
      const view = { address, pricePerStep: price, memoryMiB: Number(memoryMiB), active, registered: true, stakeFree };
      this.providers.set(address.toLowerCase(), view);
    });
  }

  private async blockTime(n: number): Promise<bigint> {
    const b = await read(this.ctx, `block ${n}`, () => this.ctx.provider.getBlock(n));
    if (!b) throw new Error(`no block ${n}`);
    return BigInt(b.timestamp);
  }
}

const byId = (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0);
