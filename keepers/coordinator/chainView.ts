/**
 * The coordinator's picture of the chain, kept up to date from events instead of re-read every tick: each tick
 * fetches the escrow's and the registry's logs since the last tick (one getLogs per 10 000 blocks), re-reads only
 * the jobs those logs name (and jobs created since), batched through Multicall3, folds each provider's offer and
 * stake from its registry events (stakeBook.ts), learns fencing from CheckpointRefused and which providers wait
 * for a re-stake after a slash from StakeSlashed and StakeDeposited (sdk/rules/restake.ts). A tick with nothing new
 * costs a handful of requests whatever the number of jobs.
 *
 * Why it is enough: every escrow function that changes a job emits an event naming the job, and a job's Open or
 * Running status is never derived from the clock (only Settleable and ArbiterTimedOut are, which the coordinator
 * never acts on); the lease's lapse is compared with chain time in decide.ts from the stored `leaseExpiresAt`.
 *
 * The cold start (a restarted coordinator, 1,000 jobs) must be live within about a second, so: logs are asked only
 * for the events that name a job or a provider (topic filter, one request over both contracts), read by their
 * topics (no ABI decoding: every such event names its job or provider as the first indexed argument); a job whose
 * logs show its training over (verdict, cancellation) is never read at all; and the batched answers are sliced by
 * word (sdk/rules/job.ts `staticDecoder`) instead of going through the generic ABI coder.
 */
import type { Contract, Interface } from "ethers";
import { isTraining, isTrainingOver } from "../../sdk/rules/job.ts";
import { checksummed, readStoredJobsBatched, staticDecoder, wordDecoder } from "../../sdk/node/jobReads.ts";
import { DEFAULT_REMEMBERED_BLOCKS, LogCursor, type RawLog } from "../../sdk/node/logRange.ts";
import { RestakeBook, type SlashMark } from "../../sdk/rules/restake.ts";
import { batchReader, valueOf, type BatchReader, type RawResult } from "../../sdk/node/multicall.ts";
import { read, type KeeperContext } from "../chain.ts";
import type { CoordinatorJob, ProviderView } from "./decide.ts";
import { freeStake, isStakeEvent, STAKE_EVENTS, type Stake } from "../../sdk/rules/stake.ts";
import { StakeBooks } from "./stakeBook.ts";
import { TrackRecords } from "./trackRecord.ts";

const LOG_CHUNK = 10_000;
const ZERO_ADDRESS = "0x0000000000000000000000000000000000000000";

/** Escrow events the track record folds (trackRecord.ts `apply`). */
const HISTORY_EVENTS = new Set(["CheckpointReported", "CheckpointAccepted", "ProviderUnassigned", "CheckpointLapsed"]);

/** Escrow events after which a job never trains again: its id is dropped without a read. */
const TRAINING_OVER_EVENTS = new Set(["VerdictSubmitted", "JobCancelled", "JobSettled"]);

/** What one refresh's logs call for: jobs and providers to re-read, and jobs known whole from their JobCreated. */
interface Dirty {
  jobs: Set<bigint>;
  providers: Set<string>;
  created: Map<bigint, CoordinatorJob>;
}

/** What a log's topic0 means here: which contract, which event, whether its first indexed argument names a subject. */
interface EventKind {
  fromEscrow: boolean;
  name: string;
}

export interface ChainViewStats {
  /** Jobs read from the chain (jobOf) this refresh. */
  jobsRead: number;
  /** New jobs whose only event is JobCreated: known from the event itself, not read. */
  jobsFromEvents?: number;
  /** Providers whose view was refreshed (named by a registry event). */
  providersRead: number;
  /** Of those, the ones read with quote and stakeOf: only those whose ProviderRegistered could not be decoded. */
  stakesRead?: number;
  logs: number;
  /** Where the refresh's time went, ms: the log scan, the job reads, the provider reads. */
  ms?: { logs: number; jobs: number; providers: number };
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
  history = new TrackRecords();
  /**
   * Each provider's latest slash and deposit, from the registry's StakeSlashed and StakeDeposited: `waiting` are
   * those slashed for a proven fault with no deposit since, never assigned until they re-stake (decide.ts). Folded from
   * `fromBlock` like the stakes, so a restarted coordinator rebuilds it; a slash before `fromBlock` is not seen.
   */
  restake = new RestakeBook();
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
  /**
   * Jobs and providers that events already folded (or a job count) named, whose reads have not succeeded yet: a
   * refresh that failed after its log scan (the node down, or a pruned node refusing the scan's block after a long
   * scan) leaves the cursor past those events, so the next refresh reads them from here.
   */
  private unread = { jobs: new Set<bigint>(), providers: new Set<string>() };
  /** topic0 → event, for the escrow events naming a job and the registry events naming a provider. */
  private readonly kinds: Map<string, EventKind>;
  private readonly decodeQuote: (data: string) => Record<string, unknown>;
  private readonly decodeStake: (data: string) => Record<string, unknown>;
  private readonly decodeCreated: ((data: string) => Record<string, unknown>) | undefined;
  /** Registry event data by name (numbers only; strings skipped). */
  private readonly registryData = new Map<string, (data: string) => Record<string, unknown>>();
  /** Each registered provider's offer, from its events (lower-case address). */
  private readonly offers = new Map<string, { pricePerStep: bigint; memoryMiB: number; active: boolean }>();
  /** Each registered provider's stake as the registry's stake events state it (stakeBook.ts). */
  private stakes = new StakeBooks();
  private stakesRead = 0;
  private readonly escrowLower: string;
  last: ChainViewStats = { jobsRead: 0, providersRead: 0, logs: 0 };

  private readonly fromBlock: number;
  private cursor: LogCursor;
  /** Reorganisations seen; after each the view was folded again from `fromBlock` (sdk/node/logRange.ts reports them). */
  reorgs = 0;

  constructor(ctx: KeeperContext, fromBlock: number) {
    this.ctx = ctx;
    this.fromBlock = fromBlock;
    this.batch = ctx.batch ?? batchReader(ctx.provider);
    this.escrowIface = (ctx.escrow as unknown as Contract).interface;
    this.registryIface = (ctx.registry as unknown as Contract).interface;
    this.scannedTo = fromBlock - 1;
    this.escrowLower = this.escrowAddress().toLowerCase();
    this.kinds = new Map([
      ...subjectEvents(this.escrowIface, "jobId", true),
      ...subjectEvents(this.registryIface, "provider", false),
    ]);
    this.decodeQuote = staticDecoder(this.registryIface, "quote");
    this.decodeStake = staticDecoder(this.registryIface, "stakeOf");
    this.decodeCreated = wordDecoder(this.escrowIface.getEvent("JobCreated")!.inputs.filter((i) => !i.indexed));
    for (const name of ["ProviderRegistered", "ProviderUpdated", ...STAKE_EVENTS]) {
      const decode = wordDecoder(
        this.registryIface.getEvent(name)!.inputs.filter((i) => !i.indexed),
        true,
      );
      if (decode) this.registryData.set(name, decode);
    }
    this.cursor = this.newCursor();
  }

  private newCursor(): LogCursor {
    const filter = { address: [this.escrowAddress(), this.registryAddress()], topics: [[...this.kinds.keys()]] };
    return new LogCursor(this.ctx.provider, filter, this.fromBlock, DEFAULT_REMEMBERED_BLOCKS, LOG_CHUNK);
  }

  /** Forgets everything folded from events (a reorganisation replaced some): the next read folds from `fromBlock`. */
  private reset(): void {
    this.jobs.clear();
    this.providers.clear();
    this.registered.clear(); // the same set: the heartbeat check holds it
    this.fenced.clear();
    this.history = new TrackRecords();
    this.restake = new RestakeBook();
    this.stakes = new StakeBooks();
    this.done.clear();
    this.offers.clear();
    this.knownJobCount = 0n;
    this.scannedTo = this.fromBlock - 1;
    this.unread = { jobs: new Set(), providers: new Set() };
    this.cursor = this.newCursor();
    this.reorgs += 1;
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
    const dirty: Dirty = { jobs: new Set(), providers: new Set(), created: new Map() };
    const t0 = performance.now();
    const logs = await this.logsSince(block); // also at the same height: a replaced head is found here
    for (const log of logs) this.apply(log, dirty);
    await this.history.resolve((n) => this.blockTime(n));
    await this.resolveSlashTimes();
    this.scannedTo = Math.max(this.scannedTo, block);
    const ids = new Set([...dirty.jobs, ...this.unread.jobs]);
    for (let id = this.knownJobCount + 1n; id <= jobCount; id++) ids.add(id);
    if (jobCount > this.knownJobCount) this.knownJobCount = jobCount;
    // A job no other event named since its JobCreated is exactly as created: Open, epoch 0, nothing accepted.
    const fromEvents: bigint[] = [];
    const toRead: bigint[] = [];
    for (const id of [...ids].sort(byId)) {
      if (this.done.has(id) || id > jobCount) continue;
      const created = dirty.jobs.has(id) || this.unread.jobs.has(id) ? undefined : dirty.created.get(id);
      if (created) {
        this.jobs.set(id, created);
        fromEvents.push(id);
      } else toRead.push(id);
    }
    const providers = [...new Set([...dirty.providers, ...this.unread.providers])];
    this.unread = { jobs: new Set(toRead), providers: new Set(providers) };
    const t1 = performance.now();
    await this.readJobs(toRead, block);
    this.unread.jobs.clear();
    const t2 = performance.now();
    this.stakesRead = 0;
    await this.readProviders(providers, block);
    this.unread.providers.clear();
    const ms = { logs: t1 - t0, jobs: t2 - t1, providers: performance.now() - t2 };
    this.last = {
      jobsRead: toRead.length,
      jobsFromEvents: fromEvents.length,
      providersRead: providers.length,
      stakesRead: this.stakesRead,
      logs: logs.length,
      ms,
    };
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

  /**
   * Both contracts' logs naming a job or a provider up to `block`, one request per LOG_CHUNK blocks, through the one
   * cursor (sdk/node/logRange.ts). When it reports a reorganisation the view forgets what it folded and folds again from
   * `fromBlock` (the cold start, which is fast by design): simpler than undoing each book, and the same result.
   */
  private async logsSince(block: number): Promise<RawLog[]> {
    const r = await read(this.ctx, "getLogs", () => this.cursor.poll(block));
    if (!r.reorged) return r.logs;
    this.ctx.logger.warn("chain reorganisation: folding the chain view again", {
      ...r.reorged,
      fromBlock: this.fromBlock,
    });
    this.reset();
    return (await read(this.ctx, "getLogs", () => this.cursor.poll(block))).logs;
  }

  /** One log, read by its topics: the job or provider it names is re-read; fencing and endings are noted. */
  private apply(log: RawLog, dirty: Dirty): void {
    const kind = this.kinds.get(log.topics[0]);
    if (!kind || log.topics.length < 2) return;
    const fromEscrow = log.address.toLowerCase() === this.escrowLower;
    if (fromEscrow !== kind.fromEscrow) return;
    if (fromEscrow) {
      const jobId = BigInt(log.topics[1]);
      const created = kind.name === "JobCreated" ? this.createdView(jobId, log) : undefined;
      if (created) dirty.created.set(jobId, created);
      else if (TRAINING_OVER_EVENTS.has(kind.name)) this.finish(jobId);
      else dirty.jobs.add(jobId);
      if (kind.name === "CheckpointRefused") this.markFenced(jobId, topicAddress(log.topics[2]));
      // The track record (trackRecord.ts) needs these events' arguments: only they are ABI-decoded.
      if (HISTORY_EVENTS.has(kind.name)) {
        const parsed = this.escrowIface.parseLog(log);
        if (parsed) this.history.apply(parsed.name, parsed.args as unknown as Record<string, unknown>, log.blockNumber);
      }
      return;
    }
    const provider = topicAddress(log.topics[1]);
    if (kind.name === "ProviderRegistered") this.registered.add(provider);
    this.applyRegistry(kind.name, provider.toLowerCase(), log);
    this.applyRestake(kind.name, provider, log);
    dirty.providers.add(provider);
  }

  /** A slash or a deposit, placed by its log's position (sdk/rules/restake.ts); the slashed lock's job is its 2nd topic. */
  private applyRestake(name: string, provider: string, log: RawLog): void {
    if (name !== "StakeSlashed" && name !== "StakeDeposited") return;
    const mark: SlashMark = { blockNumber: log.blockNumber, logIndex: log.index };
    if (name === "StakeSlashed" && log.topics[2] !== undefined) mark.jobId = BigInt(log.topics[2]);
    this.restake.apply(name, provider, mark);
  }

  /** The block time of each slash still waiting for a re-stake whose time is not read yet (one read per block). */
  private async resolveSlashTimes(): Promise<void> {
    const times = new Map<number, bigint>();
    for (const mark of this.restake.waiting.values()) {
      if (mark.at !== undefined) continue;
      if (!times.has(mark.blockNumber)) times.set(mark.blockNumber, await this.blockTime(mark.blockNumber));
      mark.at = times.get(mark.blockNumber);
    }
  }

  /**
   * A provider's offer and stake as its events state them: registered (active, price, memory), updated (price,
   * memory), deactivated, reactivated, and every stake event (stakeBook.ts). A provider registered before the scan
   * began has no offer here: it is read with quote and stakeOf instead.
   */
  private applyRegistry(name: string, key: string, log: RawLog): void {
    const data = this.registryData.get(name)?.(log.data) as Record<string, bigint> | undefined;
    const offer = this.offers.get(key);
    if (name === "ProviderRegistered" && data) {
      this.offers.set(key, { pricePerStep: data.pricePerStep, memoryMiB: Number(data.memoryMiB), active: true });
      this.stakes.registered(key);
    } else if (name === "ProviderUpdated" && data && offer) {
      offer.pricePerStep = data.pricePerStep;
      offer.memoryMiB = Number(data.memoryMiB);
    } else if (name === "ProviderDeactivated" && offer) offer.active = false;
    else if (name === "ProviderReactivated" && offer) offer.active = true;
    else if (data && isStakeEvent(name)) {
      const jobId = log.topics[2] === undefined ? undefined : BigInt(log.topics[2]);
      this.stakes.apply(key, { name, jobId, ...data });
    }
  }

  /** The job as `createJob` stored it, from its JobCreated log (undefined: not decodable here, read it instead). */
  private createdView(jobId: bigint, log: RawLog): CoordinatorJob | undefined {
    if (!this.decodeCreated || log.topics.length < 4) return undefined;
    const d = this.decodeCreated(log.data) as Record<string, bigint>;
    return {
      jobId,
      status: "Open",
      epoch: 0n,
      templateId: log.topics[3].toLowerCase(),
      totalSteps: Number(d.totalSteps),
      acceptedStep: 0,
      pendingStep: 0,
      maxPricePerStep: d.maxPricePerStep,
      checkpointInterval: Number(d.checkpointInterval),
      budget: d.budget,
      paid: 0n,
      provider: ZERO_ADDRESS,
      leaseExpiresAt: 0n,
      lastProgressAt: 0n, // 0 while Open
      reportedAt: 0n, // nothing reported yet
    };
  }

  /** A job past training never becomes Open or Running again: never read it again, forget its fencing. */
  private finish(jobId: bigint): void {
    this.jobs.delete(jobId);
    this.done.add(jobId);
    this.fenced.delete(jobId.toString());
    this.history.forgetJob(jobId);
  }

  private async readJobs(ids: bigint[], block: number): Promise<void> {
    if (ids.length === 0) return;
    const src = { reader: this.batch, escrow: this.escrowAddress(), iface: this.escrowIface };
    const views = await read(this.ctx, `${ids.length} jobs`, () => readStoredJobsBatched(src, ids, block));
    for (const v of views) {
      if (isTraining(v.status)) this.jobs.set(v.jobId, v);
      else this.jobs.delete(v.jobId);
      if (isTrainingOver(v.status)) this.finish(v.jobId);
    }
  }

  /** Refreshes each named provider from its events; one whose registration was not seen is read (quote, stakeOf). */
  private async readProviders(addresses: string[], block: number): Promise<void> {
    const known = addresses.filter((a) => this.registered.has(a));
    const toRead = known.filter((a) => !this.offers.has(a.toLowerCase()));
    const stakes = await this.readStakes(toRead, block);
    this.stakesRead = toRead.length;
    for (const address of known) {
      const key = address.toLowerCase();
      const read = stakes.get(key);
      const offer = read?.offer ?? this.offers.get(key)!;
      const stakeFree = read ? read.stakeFree : this.stakes.free(key);
      this.providers.set(key, { address, ...offer, registered: true, stakeFree });
    }
  }

  /** quote + stakeOf of each provider, through Multicall3, word-sliced. */
  private async readStakes(addresses: string[], block: number) {
    const out = new Map<
      string,
      { offer: { pricePerStep: bigint; memoryMiB: number; active: boolean }; stakeFree: bigint }
    >();
    if (addresses.length === 0) return out;
    const registry = this.registryAddress();
    const quote = this.registryIface.getFunction("quote")!.selector;
    const stakeOf = this.registryIface.getFunction("stakeOf")!.selector;
    const calls = addresses.flatMap((a) => {
      const arg = a.slice(2).toLowerCase().padStart(64, "0");
      return [
        { target: registry, data: quote + arg },
        { target: registry, data: stakeOf + arg },
      ];
    });
    const results = await read(this.ctx, `${addresses.length} providers`, () => this.batch.readRaw(calls, block));
    addresses.forEach((address, i) => {
      const q = this.decodeQuote(answer(results[2 * i], "quote", address));
      const stake = this.decodeStake(answer(results[2 * i + 1], "stakeOf", address)) as unknown as Stake;
      const offer = {
        pricePerStep: q.pricePerStep as bigint,
        memoryMiB: Number(q.memoryMiB),
        active: q.active as boolean,
      };
      out.set(address.toLowerCase(), { offer, stakeFree: freeStake(stake) });
    });
    return out;
  }

  private async blockTime(n: number): Promise<bigint> {
    const b = await read(this.ctx, `block ${n}`, () => this.ctx.provider.getBlock(n));
    if (!b) throw new Error(`no block ${n}`);
    return BigInt(b.timestamp);
  }
}

/** The events of `iface` whose first argument is the indexed `subject` (a job id, a provider), by topic0. */
function subjectEvents(iface: Interface, subject: string, fromEscrow: boolean): [string, EventKind][] {
  const out: [string, EventKind][] = [];
  iface.forEachEvent((e) => {
    const first = e.inputs[0];
    if (first?.name === subject && first.indexed) out.push([e.topicHash, { fromEscrow, name: e.name }]);
  });
  return out;
}

/** An indexed address argument (a 32-byte topic), checksummed as ethers emits it. */
function topicAddress(topic: string): string {
  return checksummed("0x" + topic.slice(26));
}

function answer(r: RawResult, fn: string, who: string): string {
  if (r.error) throw r.error;
  if (!r.success) throw new Error(`${fn}(${who}) reverted (${r.data})`);
  return r.data;
}

const byId = (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0);
