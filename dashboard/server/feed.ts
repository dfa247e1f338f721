/**
 * The live run as recording entries (demo/recording.ts's shape): the escrow's and registry's events, held vs owed
 * at every new block, the providers' latest heartbeats (from the coordinator's GET /heartbeats) and the
 * verifiers' signatures before they land (the collector's GET /pending). Read-only: it sends no transaction.
 * The history is kept, so every new viewer starts from the whole run — the same way a recording plays.
 */
import { Contract, JsonRpcProvider, Network, type Interface } from "ethers";
import { JsonRpcClient } from "../../sdk/node/jsonRpc.ts";
import { checkDeploymentOn, connectProtocol, protocolInterfaces, rpcChainId } from "../../sdk/node/contracts.ts";
import { DeploymentError, loadDeployment, type Deployment } from "../../sdk/node/deployment.ts";
import { deploymentStartBlock } from "../../sdk/node/deploymentBlock.ts";
import type { HeartbeatListed, UnassignNote } from "../../sdk/rules/heartbeat.ts";
import { confirmationsFor, confirmedBlock } from "../../sdk/node/confirmations.ts";
import { LogCursor, type RawLog } from "../../sdk/node/logRange.ts";
import { capDeviceModel, machineBadge, machineId } from "../../sdk/run/machine.ts";
import { verifierNames } from "../../sdk/words/narrative.ts";
import { namesIn, rolledBack, type Entry, type ReorgNote, type RunLog } from "../../sdk/run/recording.ts";
import { SAFE_ABI } from "../../sdk/node/safeOwners.ts";
import { STAKE_LOCKS } from "../../sdk/rules/stake.ts";
import type { HeartbeatRow, PendingRow, Snapshot } from "./snapshot.ts";

/** Where the feed reads: the chain, and the keepers' base URLs. */
export interface FeedSources {
  rpc: string;
  /** e.g. http://127.0.0.1:8600; a function when the keepers start later (undefined until then). */
  coordinatorUrl: string | (() => string | undefined);
  collectorUrl: string | (() => string | undefined);
}

export interface FeedOptions extends FeedSources {
  deployment: Deployment;
  /**
   * The file `deployment` was read from: read again each time the feed connects anew (after a stale deployment,
   * so a redeploy that wrote new addresses into it is picked up without restarting the dashboard).
   */
  deploymentFile?: string;
  /** This machine's identity (default sdk/run/machine.ts machineId()): a provider beating from another is "separate". */
  machine?: string;
  pollMs?: number;
  maxBlocksPerQuery?: number;
  /** Entries kept in memory (oldest reserves samples are dropped first). */
  maxEntries?: number;
  /** Blocks on top before a block counts as confirmed (default: the network's, sdk/node/confirmations.ts). */
  confirmations?: number;
  /**
   * The run this dashboard serves, when it serves its own (`npm start`): the entries its recording is written from
   * (its badges, its processes' decision lines, notes and summary), relayed as they are made, with the recording's
   * own times (the feed's clock starts with the run's). Without it (a dashboard watching someone else's network)
   * only what the chain and the keepers' HTTP routes say is shown.
   */
  runLog?: Pick<RunLog, "startedAt" | "follow">;
}

export interface ProcessSeen {
  name: string;
  role: string;
  lastSeenAt: number | null;
  detail?: string;
}

export class LiveFeed {
  readonly startedAt: number;
  entries: Entry[] = [];
  /** The chain the feed reads, once connected: it answered and the deployment is on it. */
  chainId: bigint | null = null;
  /** The chain id the RPC last answered, deployment or not (null until it first answers). */
  answeredChainId: bigint | null = null;
  /**
   * Why the deployment cannot be read on the chain that answers: sdk/node/contracts.ts checkDeploymentOn's one line (a
   * stale deployment file: no contract code at its addresses, with the redeploy command; or one made on another
   * chain). Null when it is there, or when the chain does not answer (then nothing is known of the deployment).
   */
  deploymentProblem: string | null = null;
  /** The deployment read: the file's, read again on each new connection. */
  deployment: Deployment;
  indexedBlock = -1;
  headBlock: number | null = null;
  /** The highest block with the confirmation depth on top of it; blocks above it may still be replaced. */
  confirmedBlock: number | null = null;
  /** Reorganisations seen (each also an entry: metric "reorg"). */
  readonly reorgs: ReorgNote[] = [];
  private readonly o: Required<Omit<FeedOptions, "confirmations" | "deploymentFile" | "machine" | "runLog">> &
    Pick<FeedOptions, "confirmations" | "deploymentFile" | "machine" | "runLog">;
  private cursor!: LogCursor;
  private depth = 0;
  private provider: JsonRpcProvider | undefined;
  private escrow!: Contract;
  private safe!: Contract;
  private readonly interfaces: { escrow: Interface; registry: Interface };
  private readonly listeners = new Set<(e: Entry) => void>();
  private readonly lastBeat = new Map<string, string>();
  private readonly lastProblem = new Map<string, string | null>();
  /** Per provider: whether its signed beats came from another machine than this one (undefined: not said yet). */
  private readonly lastMachine = new Map<string, boolean>();
  private readonly unassignsSeen = new Set<string>();
  private readonly names = new Map<string, string>();
  /** The names the run's own lines give (namesIn: its names line, its verifiers' processes), as the page names. */
  private readonly runNames = new Map<string, string>();
  private readonly signersSeen = new Map<string, Set<string>>();
  readonly processes = new Map<string, ProcessSeen>();
  coordinator = { reachable: false, lastOkAt: null as number | null, checked: false };
  collector = { reachable: false, lastOkAt: null as number | null, checked: false };
  heartbeats: HeartbeatRow[] = [];
  pending: PendingRow[] = [];
  private owners: string[] = [];
  /** The registry's stake rules, read once (constructor-fixed on chain): what the Provide compute page states. */
  stakeRules: { minStake: string; unbondingDelay: number; locks: string } | null = null;
  private threshold = 0;
  private lastReserves = "";
  private timer: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;
  private ticking: Promise<void> | null = null;
  private unfollow: (() => void) | undefined;

  constructor(o: FeedOptions) {
    this.o = { pollMs: 1000, maxBlocksPerQuery: 2000, maxEntries: 200_000, ...o };
    this.startedAt = o.runLog?.startedAt ?? Date.now();
    this.deployment = o.deployment;
    const i = protocolInterfaces();
    this.interfaces = { escrow: i.escrow, registry: i.registry };
  }

  start(): void {
    // The run's own entries, exactly as its recording gets them (the same RunLog.add made both).
    this.unfollow = this.o.runLog?.follow((e) => this.relay(e));
    const loop = async () => {
      if (this.stopped) return;
      this.ticking = this.tick();
      await this.ticking;
      if (!this.stopped) this.timer = setTimeout(loop, this.o.pollMs);
    };
    void loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unfollow?.();
    clearTimeout(this.timer);
    await this.ticking?.catch(() => {});
    this.provider?.destroy();
  }

  subscribe(f: (e: Entry) => void): () => void {
    this.listeners.add(f);
    return () => this.listeners.delete(f);
  }

  private push(kind: Entry["kind"], source: string, data: unknown) {
    this.relay({ ms: Date.now() - this.startedAt, kind, source, data });
  }

  private relay(e: Entry) {
    if (e.kind === "log") for (const [a, n] of Object.entries(namesIn(e.source, e.data))) this.runNames.set(a, n);
    this.entries.push(e);
    if (this.entries.length > this.o.maxEntries) {
      const i = this.entries.findIndex((x) => x.kind === "metric");
      this.entries.splice(i >= 0 ? i : 0, 1);
    }
    for (const f of this.listeners) f(e);
  }

  private seen(name: string, role: string, at: number | null, detail?: string) {
    this.processes.set(name, { name, role, lastSeenAt: at, detail });
  }

  /** One round: chain first (events, reserves), then the keepers' views; each failure is recorded, none stops it. */
  async tick(): Promise<void> {
    await this.readChain().catch(() => this.checkStillDeployed());
    await Promise.all([this.readCoordinator(), this.readCollector()]);
  }

  /**
   * Connects to the chain: it answers (its chain id), the deployment is on it (sdk/node/contracts.ts checkDeploymentOn,
   * the CLI's own check), then where its events start. Any failure leaves the feed unconnected, to try again next
   * tick; a stale deployment is said (`deploymentProblem`), with the file read again each time, so a redeploy is
   * picked up by itself.
   */
  private async connect(): Promise<void> {
    // Ask the chain id first, plainly: an ethers provider on a chain that is down retries and logs forever.
    const chainId = await rpcChainId(this.o.rpc, 5000).catch((err: unknown) => {
      this.deploymentProblem = null; // a chain that does not answer says nothing of the deployment
      throw err;
    });
    this.answeredChainId = chainId;
    if (this.o.deploymentFile) {
      try {
        this.deployment = loadDeployment(this.o.deploymentFile);
      } catch {
        // being rewritten (a redeploy under way) or removed: keep the last one read; the check below says the rest
      }
    }
    const d = this.deployment;
    const network = Network.from(chainId);
    // Each read retried within 5 s (sdk/node/rpc.ts), then failed: the tick records it, the next one reads again.
    const provider = new JsonRpcClient(
      this.o.rpc,
      network,
      { staticNetwork: network, polling: false, cacheTimeout: -1, batchMaxCount: 1 },
      { budgetMs: 5_000 },
    );
    try {
      await this.checkDeployment(provider, d, chainId);
      const head = await provider.getBlockNumber();
      const start = await deploymentStartBlock(provider, d.escrow, head, d.firstBlock);
      this.provider = provider;
      this.escrow = connectProtocol(d, provider).escrow as unknown as Contract;
      this.safe = new Contract(d.verifierSafe, SAFE_ABI, provider);
      this.indexedBlock = start - 1;
      const filter = { address: [d.escrow, d.registry] };
      this.cursor = new LogCursor(provider, filter, start, undefined, this.o.maxBlocksPerQuery);
      this.depth = confirmationsFor(chainId, this.o.confirmations);
      this.chainId = chainId;
    } catch (err) {
      provider.destroy();
      throw err;
    }
  }

  /** The CLI's deployment check; its DeploymentError (stale file, other chain) becomes `deploymentProblem`. */
  private async checkDeployment(provider: JsonRpcProvider, d: Deployment, chainId: bigint): Promise<void> {
    try {
      await checkDeploymentOn(provider, d, this.o.rpc, chainId);
      this.deploymentProblem = null;
    } catch (err) {
      if (err instanceof DeploymentError) {
        this.deploymentProblem = err.message;
        this.seen("chain (RPC)", "chain", Date.now(), "answers, but the deployment file is stale");
      }
      throw err;
    }
  }

  /**
   * After a failed read on a connected chain: is the deployment still there? A chain restarted under the dashboard
   * answers, with no contract code at the deployment's addresses: what the feed read from it is gone (a
   * reorganisation from block 0 for the viewers), and the feed connects anew (reading the file again) each tick.
   */
  private async checkStillDeployed(): Promise<void> {
    if (this.chainId === null || !this.provider || this.stopped) return;
    try {
      await this.checkDeployment(this.provider, this.deployment, this.chainId);
    } catch (err) {
      if (err instanceof DeploymentError) this.forgetChain();
    }
  }

  /** Back to unconnected: what the old chain said is rolled back, and every read made once is made again. */
  private forgetChain(): void {
    this.provider?.destroy();
    this.provider = undefined;
    this.chainId = null;
    this.indexedBlock = -1;
    this.headBlock = null;
    this.confirmedBlock = null;
    this.stakeRules = null;
    this.owners = [];
    this.threshold = 0;
    this.names.clear();
    this.unassignsSeen.clear();
    this.signersSeen.clear();
    this.onReorg({ from: 0, removed: this.entries.filter((e) => e.kind === "event").length });
  }

  private async readChain() {
    if (this.chainId === null) await this.connect();
    if (!this.provider) return;
    // The escrow's and registry's events; a reorganisation drops what the replaced blocks said, then folds the
    // new chain's (sdk/node/logRange.ts finds it; viewers get a "reorg" entry and fold their history again).
    const { logs, head, reorged } = await this.cursor.poll();
    if (reorged) this.onReorg(reorged);
    for (const log of logs) this.onLog(log);
    this.indexedBlock = this.cursor.position - 1;
    this.headBlock = head;
    this.confirmedBlock = confirmedBlock(head, this.depth);
    this.seen("chain (RPC)", "chain", Date.now(), `head ${head}`);
    if (!this.stakeRules) {
      const { registry } = connectProtocol(this.deployment, this.provider);
      const [minStake, delay] = await Promise.all([registry.minStake(), registry.unbondingDelay()]);
      this.stakeRules = { minStake: minStake.toString(), unbondingDelay: Number(delay), locks: STAKE_LOCKS.toString() };
    }
    if (!this.owners.length) {
      const [owners, threshold] = await Promise.all([this.safe.getOwners(), this.safe.getThreshold()]);
      this.owners = [...owners].map(String);
      this.threshold = Number(threshold);
      for (const [address, name] of Object.entries(verifierNames(this.owners))) this.names.set(address, name);
      this.push("metric", "safe", { owners: this.owners, threshold: this.threshold });
    }
    const [held, owes] = await this.escrow.reserves({ blockTag: head });
    const key = `${head}`;
    if (key !== this.lastReserves) {
      this.lastReserves = key;
      this.push("metric", "reserves", { block: head, held: String(held), owes: String(owes) });
    }
  }

  private onReorg(r: ReorgNote) {
    this.reorgs.push({ ...r });
    this.entries = rolledBack(this.entries, r.from);
    this.lastReserves = "";
    this.push("metric", "reorg", { from: r.from, removed: r.removed });
  }

  private onLog(log: RawLog) {
    const isEscrow = log.address.toLowerCase() === this.deployment.escrow.toLowerCase();
    const iface = isEscrow ? this.interfaces.escrow : this.interfaces.registry;
    let parsed;
    try {
      parsed = iface.parseLog(log);
    } catch {
      return;
    }
    if (!parsed) return;
    const args: Record<string, unknown> = {};
    parsed.fragment.inputs.forEach((input, i) => (args[input.name] = plain(parsed.args[i])));
    // The registry stores a device model of any length: every viewer gets at most MAX_DEVICE_MODEL_BYTES of it.
    if (typeof args.deviceModel === "string") args.deviceModel = capDeviceModel(args.deviceModel);
    if (parsed.name === "ProviderRegistered") this.names.set(String(args.provider).toLowerCase(), String(args.name));
    this.push("event", "chain", {
      name: parsed.name,
      args,
      blockNumber: log.blockNumber,
      transactionHash: log.transactionHash,
      logIndex: log.index,
      contract: isEscrow ? "escrow" : "registry",
    });
  }

  url(which: "coordinatorUrl" | "collectorUrl"): string | undefined {
    const u = this.o[which];
    const v = typeof u === "function" ? u() : u;
    return v?.replace(/\/heartbeat\/?$/, "").replace(/\/+$/, "");
  }

  /** A provider's problem that appeared or cleared becomes a log entry, so a recording says it too. */
  private problemChanged(name: string, b: HeartbeatListed) {
    const problem = b.problem ?? null;
    if ((this.lastProblem.get(b.provider) ?? null) === problem) return;
    this.lastProblem.set(b.provider, problem);
    this.push("log", name, {
      component: "agent",
      level: problem ? "warn" : "info",
      msg: "problem",
      problem,
      provider: b.provider,
    });
  }

  /**
   * Whether a provider's signed beats come from another machine than this dashboard server's (sdk/run/machine.ts), as a
   * log entry when it is first known or changes: the page's "Real, separate machine" badge (with a registered GPU).
   * A coordinator whose GET /heartbeats does not list the beat's machine identity leaves it unknown: nothing said.
   */
  private machineChanged(name: string, b: HeartbeatListed) {
    if (typeof b.machine !== "string" || !/^0x[0-9a-f]{1,64}$/i.test(b.machine)) return;
    const separate = machineBadge(b.machine, this.o.machine ?? machineId()) === "Real, separate machine";
    const key = b.provider.toLowerCase();
    if (this.lastMachine.get(key) === separate) return;
    this.lastMachine.set(key, separate);
    this.push("log", name, { component: "agent", msg: "machine", provider: b.provider, separateMachine: separate });
  }

  private async readCoordinator() {
    const now = Date.now();
    const base = this.url("coordinatorUrl");
    if (!base) return; // not started yet: neither up nor down
    try {
      const res = await fetch(`${base}/heartbeats`, { signal: AbortSignal.timeout(3000) });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const body = (await res.json()) as { beats: HeartbeatListed[] };
      this.coordinator = { reachable: true, lastOkAt: now, checked: true };
      this.seen("coordinator", "keeper", now);
      this.heartbeats = body.beats.map((b) => ({
        provider: b.provider,
        name: this.nameOf(b.provider),
        job: b.jobId,
        epoch: b.epoch,
        step: b.step,
        loss: b.loss,
        ageMs: b.ageMs,
        problem: b.problem ?? null,
      }));
      for (const b of body.beats) {
        const name = this.nameOf(b.provider);
        // a provider that beat before its registration was named: its row under the address goes
        if (name !== b.provider.slice(0, 10)) this.processes.delete(b.provider.slice(0, 10));
        const doing = b.jobId === "0" ? "idle" : `job ${b.jobId} step ${b.step}`;
        this.seen(name, "provider", now - b.ageMs, b.problem ? `${doing}; ${b.problem}` : doing);
        this.problemChanged(name, b);
        this.machineChanged(name, b);
        const key = `${b.jobId}:${b.epoch}:${b.step}`;
        if (this.lastBeat.get(b.provider) === key) continue;
        this.lastBeat.set(b.provider, key);
        // The same shape as the agent's own "progress" line in a recording.
        this.push("log", name, {
          component: "agent",
          msg: b.jobId === "0" ? "idle" : "progress",
          provider: b.provider,
          job: b.jobId,
          epoch: b.epoch,
          step: b.step,
          ...(b.loss === null ? {} : { loss: b.loss }),
          ...(b.stepsPerSecond === null ? {} : { stepsPerSecond: b.stepsPerSecond }),
        });
      }
      await this.readUnassignments(base);
    } catch {
      this.coordinator = { ...this.coordinator, reachable: false, checked: true };
      this.seen("coordinator", "keeper", this.coordinator.lastOkAt, "not answering");
    }
  }

  /**
   * Why the coordinator took each job away (its GET /unassignments; the chain says only "the coordinator"), as a
   * log entry once each, so live and a recording tell the same reason. An older coordinator without the route: none.
   */
  private async readUnassignments(base: string) {
    const res = await fetch(`${base}/unassignments`, { signal: AbortSignal.timeout(3000) });
    if (!res.ok) return;
    const body = (await res.json()) as { unassignments?: UnassignNote[] };
    for (const u of body.unassignments ?? []) {
      const key = `${u.jobId}:${u.epoch}`;
      if (this.unassignsSeen.has(key)) continue;
      this.unassignsSeen.add(key);
      this.push("log", "keepers", {
        component: "coordinator",
        msg: "unassigned",
        job: u.jobId,
        epoch: u.epoch,
        provider: u.provider,
        reason: u.reason,
      });
    }
  }

  private async readCollector() {
    const now = Date.now();
    const base = this.url("collectorUrl");
    if (!base) return;
    try {
      const res = await fetch(`${base}/pending`, { signal: AbortSignal.timeout(3000) });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const body = (await res.json()) as {
        pending: {
          digest: string;
          kind: string;
          job: string;
          epoch?: string;
          step?: number;
          action: string;
          signers: string[];
        }[];
      };
      this.collector = { reachable: true, lastOkAt: now, checked: true };
      this.seen("collector", "keeper", now);
      this.pending = body.pending.map((p) => ({
        kind: p.kind,
        job: p.job,
        epoch: p.epoch,
        step: p.step,
        accept: p.action === "accept",
        signers: p.signers,
        threshold: this.threshold,
      }));
      for (const p of body.pending) {
        const seen = this.signersSeen.get(p.digest) ?? new Set<string>();
        this.signersSeen.set(p.digest, seen);
        for (const signer of p.signers) {
          if (seen.has(signer)) continue;
          seen.add(signer);
          this.seen(
            this.nameOf(signer),
            "verifier",
            now,
            `signed job ${p.job}${p.step ? ` step ${p.step}` : " verdict"}`,
          );
          // The same shape as the collector's own "signature" line in a recording.
          this.push("log", "keepers", {
            component: "collector",
            msg: "signature",
            job: p.job,
            epoch: p.epoch,
            step: p.step,
            action: p.action,
            digest: p.digest,
            signer,
          });
        }
      }
      if (this.signersSeen.size > 10_000) this.signersSeen.clear();
    } catch {
      this.collector = { ...this.collector, reachable: false, checked: true };
      this.seen("collector", "keeper", this.collector.lastOkAt, "not answering");
    }
  }

  private nameOf(address: string): string {
    const key = address.toLowerCase();
    return this.runNames.get(key) ?? this.names.get(key) ?? address.slice(0, 10);
  }

  snapshot(): Snapshot {
    return {
      at: Date.now(),
      coordinator: {
        url: this.url("coordinatorUrl") ?? null,
        reachable: this.coordinator.checked ? this.coordinator.reachable : null,
        lastOkAt: this.coordinator.lastOkAt,
      },
      collector: {
        url: this.url("collectorUrl") ?? null,
        reachable: this.collector.checked ? this.collector.reachable : null,
        lastOkAt: this.collector.lastOkAt,
      },
      processes: [...this.processes.values()],
      heartbeats: this.heartbeats,
      pending: this.pending,
      indexedBlock: this.indexedBlock,
      headBlock: this.headBlock,
      confirmedBlock: this.confirmedBlock,
      deploymentProblem: this.deploymentProblem,
      escrow: this.deployment.escrow,
      chainId: this.answeredChainId?.toString() ?? null,
    };
  }
}

function plain(v: unknown): unknown {
  if (typeof v === "bigint") return v.toString();
  if (Array.isArray(v)) return v.map(plain);
  return v;
}
