/**
 * `npm start -- --network rehearsal`: the whole scenario on a chain that behaves like a public one.
 * anvil mines a block every 2 s; every part reaches it only through a fault proxy of its own (sdk/node/faultProxy.ts:
 * latency 50–300 ms, 5 % of calls answered 429, 1 % dropped after the node acted, 1 % truncated bodies), so the
 * injected faults are counted per part. At chosen moments the run reorganises the chain (anvil_reorg, straight to
 * the node, not through a proxy): just after a report, just after an acceptance, just after the verdict, depths 1, 2
 * and 3, each deep enough to remove the block that carried the event. The client's job posting goes out just before
 * a base-fee spike (anvil_setNextBlockBaseFeePerGas) that leaves it below the new base fee; the client speeds it up
 * at the same nonce. Money actions wait for 1 confirmation (GPUCHAIN_CONFIRMATIONS=1 for every child).
 *
 * What anvil (1.7) does, measured on it (the rehearsal relies on it, docs/ARCHITECTURE.md "Reorganisations"):
 * - `anvil_reorg [depth, []]` replaces the last `depth` blocks with as many empty ones (the head number stays); the
 *   transactions of the removed blocks are DROPPED — not back in the pool (`txpool_content` empty), never mined
 *   later, the sender's nonce back where it was. Their senders must send again; nobody else will.
 * - `anvil_rollback n` removes n blocks the same way (head − n), transactions dropped too.
 * - A transaction whose max fee is below the base fee of the block being mined is removed from the pool, not kept
 *   pending (geth would keep it): "stuck" on anvil means never mined until the sender replaces it at its nonce.
 *   A send whose max fee is below the next block's base fee is refused at once ("max fee per gas less than block
 *   base fee"), so the stuck transaction must be in the pool before the spike is set.
 *
 * Every figure it prints comes from a counter: the proxies' (what was injected, to whom), the chain's (which dropped
 * transaction was sent again, which transaction reverted, reserves at every block), the watcher's (rollbacks).
 */
import { computeAddress, Interface, JsonRpcProvider, type TransactionRequest, type Wallet } from "ethers";
import { FaultProxy, type FaultCounts } from "../sdk/node/faultProxy.ts";
import { protocolInterfaces, type Protocol } from "../sdk/node/contracts.ts";
import { sleep } from "../sdk/run/retry.ts";
import { withGasHeadroom } from "../sdk/node/gas.ts";
import { managedWallet } from "../sdk/node/txManager.ts";
import { deployLocal, freePort, startAnvil, TEST_KEYS, type SafeOwners } from "./chain.ts";
import type { ProcessGroup } from "./processes.ts";

/** One promise and whether it held (demo/types.ts's PromiseCheck, spelled here: types.ts imports network.ts). */
interface PromiseCheck {
  promise: string;
  held: boolean;
  detail: string;
}

/** What the rehearsal assumes of a public L2 endpoint (Base Sepolia through a public RPC). */
export const REHEARSAL = {
  blockTimeS: 2,
  latencyMs: [50, 300] as [number, number],
  rate429: 0.05,
  dropRate: 0.01,
  truncateRate: 0.01,
  confirmations: 1,
  seed: 22,
};

/** The moments a reorganisation is injected, in order, and the depth each asks for. */
export const REORG_MOMENTS = [
  { after: "CheckpointReported", depth: 1 },
  { after: "CheckpointAccepted", depth: 2 },
  { after: "VerdictSubmitted", depth: 3 },
] as const;

/** Each part's own proxy (its faults counted apart); anything else goes through "other". */
export const PARTS = [
  "start",
  "dashboard",
  "keepers",
  "verifier1",
  "verifier2",
  "verifier3",
  "mallory",
  "alice",
  "bob",
  "other",
] as const;

export interface DroppedTx {
  hash: string;
  from: string;
  nonce: number;
  call: string;
}

export interface ReorgRecord {
  moment: string;
  depth: number;
  /** Block number of the event the moment follows, and the head when the reorg was sent. */
  eventBlock: number;
  head: number;
  /** Whether the event's block was among the replaced ones. */
  removedEvent: boolean;
  dropped: DroppedTx[];
}

export interface SpikeRecord {
  baseFeeBefore: bigint;
  spikeBaseFee: bigint;
  stuckHash: string;
  stuckMaxFee: bigint;
  nonce: number;
  /** Blocks mined while the transaction waited below the base fee. */
  blocksStuck: number;
  replacementHash?: string;
  replacementMaxFee?: bigint;
  minedBlock?: number;
  /** Whether the spike came too late (the transaction was mined in the block before it). */
  missed: boolean;
  /** Versions signed after the first at its nonce (the transaction manager's speed-ups). */
  speedUps?: number;
}

/** Pure: the depth that removes the event's block (head − block + 1), at least `planned`, at most 3. */
export function reorgDepth(planned: number, head: number, eventBlock: number): number {
  return Math.min(3, Math.max(planned, head - eventBlock + 1));
}

export class Rehearsal {
  readonly anvilUrl: string;
  /** Straight to anvil, no faults: the injector's and the auditor's own line. */
  readonly direct: JsonRpcProvider;
  readonly proxies = new Map<string, FaultProxy>();
  readonly reorgs: ReorgRecord[] = [];
  spike?: SpikeRecord;
  /** Rollbacks the run's own watcher did (it folds again from the ancestor). */
  watcherRollbacks = 0;
  /** What each child logged doing about a fault, by kind (rollbacks, re-broadcasts, speed-ups). */
  readonly partActs: Record<string, Record<string, number>> = {};
  readonly startedAt = Date.now();
  private readonly done = new Set<string>();
  private readonly savedConfirmations = process.env.GPUCHAIN_CONFIRMATIONS;
  private readonly ifaces: Interface[];

  private constructor(anvilUrl: string) {
    this.anvilUrl = anvilUrl;
    this.direct = new JsonRpcProvider(anvilUrl, undefined, { staticNetwork: true, cacheTimeout: -1 });
    const i = protocolInterfaces();
    this.ifaces = [i.escrow, i.registry, i.usdc].filter((x): x is Interface => x instanceof Interface);
  }

  /** anvil with 2-s blocks, the local deployment (straight, not a rehearsal subject), a proxy per part. */
  static async start(
    group: ProcessGroup,
    o: { deploymentId: string; port?: number; owners?: SafeOwners },
    note: (l: string) => void,
  ): Promise<{ rehearsal: Rehearsal; deploymentFile: string }> {
    const port = o.port ?? (await freePort(8545));
    note(`starting anvil on 127.0.0.1:${port} …`);
    const anvilUrl = await startAnvil(group, port);
    note("deploying test USDC, registry, verifier Safe (2 of 3) and escrow through Ignition …");
    // Set-up is not what the rehearsal tests: deployed on automine (seconds), then a block every 2 s from here on.
    const deploymentFile = await deployLocal(anvilUrl, o.deploymentId, o.owners);
    const r = new Rehearsal(anvilUrl);
    await r.direct.send("evm_setIntervalMining", [REHEARSAL.blockTimeS]);
    note(`anvil now mines a block every ${REHEARSAL.blockTimeS} s (interval mining, no automine)`);
    let seed = REHEARSAL.seed;
    for (const part of PARTS) {
      const proxy = new FaultProxy({
        target: anvilUrl,
        seed: seed++,
        latencyMs: REHEARSAL.latencyMs,
        rate429: REHEARSAL.rate429,
        dropRate: REHEARSAL.dropRate,
        truncateRate: REHEARSAL.truncateRate,
      });
      r.proxies.set(part, await proxy.start());
    }
    // Every child inherits it: money actions wait for one block on top (sdk/node/confirmations.ts).
    process.env.GPUCHAIN_CONFIRMATIONS = String(REHEARSAL.confirmations);
    note(
      `rehearsal: every part reaches the chain through its own fault proxy (latency ${REHEARSAL.latencyMs.join("–")} ms, ` +
        `${pct(REHEARSAL.rate429)} 429, ${pct(REHEARSAL.dropRate)} dropped, ${pct(REHEARSAL.truncateRate)} truncated); ` +
        `confirmation depth ${REHEARSAL.confirmations}`,
    );
    return { rehearsal: r, deploymentFile };
  }

  rpcFor(part: string): string {
    return (this.proxies.get(part) ?? this.proxies.get("other")!).url;
  }

  async close(): Promise<void> {
    if (this.savedConfirmations === undefined) delete process.env.GPUCHAIN_CONFIRMATIONS;
    else process.env.GPUCHAIN_CONFIRMATIONS = this.savedConfirmations;
    for (const p of this.proxies.values()) await p.stop().catch(() => undefined);
    this.direct.destroy();
  }

  /**
   * A child's line: counts what it says it did about an injected fault — a transaction re-broadcast after a reorg
   * or unknown to the node, a speed-up at the same nonce (sdk/node/txManager.ts), a fold rolled back (keepers, agent,
   * verifier: their "reorganisation" records).
   */
  childLine(name: string, line: string): void {
    const kind = /re-broadcast/.test(line)
      ? "re-broadcasts"
      : /re-sent at the same nonce/.test(line)
        ? "speed-ups"
        : /reorgani[sz]ation/i.test(line)
          ? "rollbacks"
          : undefined;
    if (!kind) return;
    const acts = (this.partActs[name] ??= {});
    acts[kind] = (acts[kind] ?? 0) + 1;
  }

  /** After the watcher saw `event` (of the job): the reorg planned for that moment, once. */
  async afterEvent(event: { name: string; blockNumber: number }, note: (l: string) => void): Promise<boolean> {
    const moment = REORG_MOMENTS.find((m) => m.after === event.name);
    if (!moment || this.done.has(moment.after)) return false;
    this.done.add(moment.after);
    const head = await this.direct.getBlockNumber();
    const depth = reorgDepth(moment.depth, head, event.blockNumber);
    const dropped: DroppedTx[] = [];
    for (let b = head - depth + 1; b <= head; b++) {
      const block = (await this.direct.send("eth_getBlockByNumber", [toHex(b), true])) as {
        transactions: { hash: string; from: string; nonce: string; input: string }[];
      };
      for (const t of block.transactions)
        dropped.push({
          hash: t.hash,
          from: t.from.toLowerCase(),
          nonce: Number(t.nonce),
          call: this.callName(t.input),
        });
    }
    await this.direct.send("anvil_reorg", [depth, []]);
    const record: ReorgRecord = {
      moment: `just after ${event.name} (block ${event.blockNumber})`,
      depth,
      eventBlock: event.blockNumber,
      head,
      removedEvent: event.blockNumber > head - depth,
      dropped,
    };
    this.reorgs.push(record);
    note(
      `>>> injected: reorganisation of depth ${depth} ${record.moment}, head ${head}; ` +
        `${dropped.length} transaction(s) dropped: ${dropped.map((d) => d.call).join(", ") || "none"}`,
    );
    return true;
  }

  /** The function a transaction called, by its selector on the protocol's contracts. */
  callName(input: string): string {
    if (!input || input === "0x") return "transfer";
    for (const i of this.ifaces) {
      const f = i.getFunction(input.slice(0, 10));
      if (f) return f.name;
    }
    // The verifier Safe or anything else: its selector.
    return input.slice(0, 10);
  }

  /** Waits until anvil mines its next block (straight, so the spike lands before the block after it). */
  private async nextBlock(): Promise<number> {
    const h = await this.direct.getBlockNumber();
    for (;;) {
      const now = await this.direct.getBlockNumber();
      if (now > h) return now;
      await sleep(25);
    }
  }

  /**
   * The client's `createJob` through its key's transaction manager (sdk/node/txManager.ts), sent just after a block and
   * followed at once by a base-fee spike far above its max fee: not mined under it (anvil drops it from the pool);
   * the manager replaces it at the same nonce by its speed-up rule (3 blocks or 60 s) until a version is mined.
   */
  async sendUnderSpike(
    client: Wallet,
    request: TransactionRequest,
    note: (l: string) => void,
  ): Promise<{ hash: string; blockNumber: number }> {
    const wallet = managedWallet(client, client.provider!);
    // Estimated before the block boundary, so that the send after it is only fees, nonce and the broadcast.
    const gasLimit = withGasHeadroom(await client.estimateGas(request));
    const before = (await this.direct.getBlock("latest"))!.baseFeePerGas ?? 0n;
    await this.nextBlock();
    const { managed, response } = await wallet.manager.send({ ...request, gasLimit });
    const maxFee = response.maxFeePerGas ?? 0n;
    const spikeBaseFee = maxFee * 10n > 20n * 10n ** 9n ? maxFee * 10n : 20n * 10n ** 9n;
    await this.direct.send("anvil_setNextBlockBaseFeePerGas", [toHex(spikeBaseFee)]);
    const startBlock = await this.direct.getBlockNumber();
    const spike: SpikeRecord = {
      baseFeeBefore: before,
      spikeBaseFee,
      stuckHash: response.hash,
      stuckMaxFee: maxFee,
      nonce: response.nonce,
      blocksStuck: 0,
      missed: false,
    };
    this.spike = spike;
    note(
      `>>> injected: base fee spike to ${gwei(spikeBaseFee)} gwei (was ${gwei(before)}) just after the client sent ` +
        `createJob at ${gwei(maxFee)} gwei max fee (nonce ${response.nonce})`,
    );
    const receipt = await managed.wait();
    const mined = managed.versions.find((v) => v.hash === receipt.hash);
    spike.minedBlock = receipt.blockNumber;
    spike.missed = receipt.hash === response.hash && receipt.blockNumber <= startBlock;
    spike.blocksStuck = receipt.blockNumber - startBlock;
    spike.speedUps = managed.versions.length - 1;
    if (receipt.hash !== response.hash) {
      spike.replacementHash = receipt.hash;
      spike.replacementMaxFee = mined && "maxFeePerGas" in mined.fees ? mined.fees.maxFeePerGas : undefined;
    }
    note(
      `client: createJob mined in block ${receipt.blockNumber}, ${spike.blocksStuck} blocks after the spike, ` +
        `after ${spike.speedUps} speed-up(s) at nonce ${response.nonce}`,
    );
    return { hash: receipt.hash, blockNumber: receipt.blockNumber };
  }

  /** Lets `seconds` of chain time pass (straight to anvil: the injector's clock, not a part's read). */
  async passTime(seconds: number): Promise<void> {
    await this.direct.send("evm_increaseTime", [seconds]);
    await this.direct.send("evm_mine", []);
  }

  /** Funds `address` for gas, straight on anvil. */
  async fundGas(address: string): Promise<void> {
    await this.direct.send("anvil_setBalance", [address, "0x56BC75E2D63100000"]);
  }

  /** Totals of every proxy's counters. */
  injected(): Pick<FaultCounts, "requests" | "http429" | "http5xx" | "drop" | "truncate"> {
    const t = { requests: 0, http429: 0, http5xx: 0, drop: 0, truncate: 0 };
    for (const p of this.proxies.values())
      for (const k of Object.keys(t) as (keyof typeof t)[]) t[k] += p.counts[k] as number;
    return t;
  }

  /**
   * The audit, from the chain straight (no proxy): every dropped transaction's fate (its nonce used again by the
   * same transaction, by another, or never), every transaction of the run that reverted, reserves at every block.
   */
  async audit(
    protocol: Protocol,
    names: Record<string, string>,
    fromBlock: number,
    honest: string[],
  ): Promise<RehearsalAudit> {
    const head = await this.direct.getBlockNumber();
    const mined = new Map<string, { hash: string; block: number; call: string }>(); // from:nonce → who used it
    const reverted: { block: number; who: string; call: string; hash: string }[] = [];
    let minMargin: bigint | undefined;
    let blocks = 0;
    const escrow = protocol.escrow.connect(this.direct);
    const esc = escrow;
    for (let b = fromBlock; b <= head; b++) {
      const block = (await this.direct.send("eth_getBlockByNumber", [toHex(b), true])) as {
        transactions: { hash: string; from: string; nonce: string; input: string }[];
      };
      const receipts = (await this.direct.send("eth_getBlockReceipts", [toHex(b)])) as {
        transactionHash: string;
        status: string;
      }[];
      for (const t of block.transactions) {
        mined.set(`${t.from.toLowerCase()}:${Number(t.nonce)}`, {
          hash: t.hash,
          block: b,
          call: this.callName(t.input),
        });
        const r = receipts.find((x) => x.transactionHash === t.hash);
        if (r && Number(r.status) === 0)
          reverted.push({
            block: b,
            who: names[t.from.toLowerCase()] ?? t.from,
            call: this.callName(t.input),
            hash: t.hash,
          });
      }
      const [held, owes] = await escrow.reserves({ blockTag: b });
      const margin = held - owes;
      if (minMargin === undefined || margin < minMargin) minMargin = margin;
      blocks++;
    }
    const fates = this.reorgs.flatMap((r) =>
      r.dropped.map((d) => {
        const again = mined.get(`${d.from}:${d.nonce}`);
        const fate = !again
          ? "never mined again"
          : again.hash === d.hash
            ? "sent again as is"
            : "replaced at its nonce";
        return { ...d, who: names[d.from] ?? d.from, fate, block: again?.block };
      }),
    );
    // Honest providers: never refused, never slashed (the chain's events over the whole run).
    const refused = await esc.queryFilter(esc.filters.CheckpointRefused(), 0, head);
    const slashed = await esc.queryFilter(esc.filters.ProviderSlashed(), 0, head);
    const hurt = [...refused, ...slashed]
      .map((e) => String(e.args.provider).toLowerCase())
      .filter((p) => honest.includes(p));
    // The stuck call ran once: one JobCreated on the whole chain (versions at one nonce: at most one can be mined).
    const created = (await esc.queryFilter(esc.filters.JobCreated(), 0, head)).length;
    return { head, blocks, minMargin: minMargin ?? 0n, reverted, fates, honestHurt: hurt.length, jobsCreated: created };
  }

  /** The checks the rehearsal adds to `npm start`'s, and the lines saying what was injected and who did what. */
  report(audit: RehearsalAudit, jobSeconds: number | undefined, moneyCalls: Set<string>): RehearsalReport {
    const inj = this.injected();
    const moneyReverts = audit.reverted.filter((r) => moneyCalls.has(r.call));
    const lost = audit.fates.filter((f) => f.fate === "never mined again" && moneyCalls.has(f.call));
    const checks: PromiseCheck[] = [
      {
        promise: "proof of reserves held at every block of the final chain (read straight from the node)",
        held: audit.minMargin >= 0n && audit.blocks > 0,
        detail: `${audit.blocks} blocks, smallest margin ${audit.minMargin} base units`,
      },
      {
        promise: "no honest provider was refused or slashed",
        held: audit.honestHurt === 0,
        detail: `${audit.honestHurt} refusals or slashes of alice or bob`,
      },
      {
        promise: `${REORG_MOMENTS.length} reorganisations injected, each removing its moment's block`,
        held: this.reorgs.length === REORG_MOMENTS.length && this.reorgs.every((r) => r.removedEvent),
        detail: this.reorgs
          .map((r) => `depth ${r.depth} ${r.removedEvent ? "removed" : "missed"} ${r.moment}`)
          .join("; "),
      },
      {
        promise: "the transaction stuck below the gas spike was sped up and mined once",
        held:
          this.spike !== undefined &&
          !this.spike.missed &&
          this.spike.replacementHash !== undefined &&
          audit.jobsCreated === 1,
        detail: this.spike
          ? `stuck ${this.spike.blocksStuck} blocks, ${this.spike.speedUps ?? 0} speed-up(s), ` +
            `${audit.jobsCreated} JobCreated on chain (block ${this.spike.minedBlock ?? "–"})`
          : "no spike",
      },
      {
        promise: "no money transaction reverted or was lost in a reorganisation",
        held: moneyReverts.length === 0 && lost.length === 0,
        detail:
          `${moneyReverts.length} reverted (${moneyReverts.map((r) => `${r.who} ${r.call}`).join(", ") || "none"}), ` +
          `${lost.length} dropped and never sent again`,
      },
    ];
    const perPart = [...this.proxies.entries()]
      .filter(([, p]) => p.counts.requests > 0)
      .map(
        ([name, p]) =>
          `  ${name}: ${p.counts.requests} requests; injected ${p.counts.http429} rate limits (HTTP 429), ` +
          `${p.counts.drop} dropped, ${p.counts.truncate} truncated (each one retried by its RPC layer, or a call ` +
          `given up and tried next tick)` +
          (this.partActs[name]
            ? `; logged ${Object.entries(this.partActs[name])
                .map(([k, n]) => `${n} ${k}`)
                .join(", ")}`
            : ""),
      );
    const lines = [
      "",
      "rehearsal: what was injected",
      `  RPC faults: ${inj.requests} requests, ${inj.http429} rate limits (HTTP 429), ${inj.drop} dropped, ` +
        `${inj.truncate} truncated ` +
        `(latency ${REHEARSAL.latencyMs.join("–")} ms each)`,
      ...this.reorgs.map(
        (r) =>
          `  reorganisation depth ${r.depth} ${r.moment}, head ${r.head}: ${r.dropped.length} transaction(s) dropped`,
      ),
      this.spike
        ? `  gas spike: base fee ${gwei(this.spike.baseFeeBefore)} → ${gwei(this.spike.spikeBaseFee)} gwei with the ` +
          `client's createJob at max fee ${gwei(this.spike.stuckMaxFee)} gwei in the pool`
        : "  gas spike: none",
      "rehearsal: what each part did",
      ...perPart,
      `  npm start's watcher: ${this.watcherRollbacks} rollback(s) to the common ancestor, folded again`,
      ...audit.fates.map(
        (f) =>
          `  ${possessive(f.who)} ${f.call} (nonce ${f.nonce}), dropped by a reorganisation: ${f.fate}` +
          (f.block !== undefined ? ` (block ${f.block})` : ""),
      ),
      this.spike?.replacementHash
        ? `  client: sped up its stuck createJob ${this.spike.speedUps} time(s) at nonce ` +
          `${this.spike.nonce} (max fee ${gwei(this.spike.stuckMaxFee)} → ` +
          `${this.spike.replacementMaxFee === undefined ? "?" : gwei(this.spike.replacementMaxFee)} gwei), ` +
          `mined in block ${this.spike.minedBlock}`
        : "  client: no speed-up",
      `  reverted transactions: ${audit.reverted.length}` +
        (audit.reverted.length
          ? ` (${audit.reverted.map((r) => `${r.who} ${r.call} block ${r.block}`).join(", ")})`
          : ""),
      `  job wall time: ${jobSeconds === undefined ? "n/a" : `${jobSeconds.toFixed(1)} s`}`,
    ];
    return { checks, lines, falseActions: audit.reverted.length, moneyFalseActions: moneyReverts.length + lost.length };
  }
}

export interface RehearsalAudit {
  head: number;
  blocks: number;
  minMargin: bigint;
  reverted: { block: number; who: string; call: string; hash: string }[];
  fates: (DroppedTx & { who: string; fate: string; block?: number })[];
  honestHurt: number;
  jobsCreated: number;
}

export interface RehearsalReport {
  checks: PromiseCheck[];
  lines: string[];
  falseActions: number;
  moneyFalseActions: number;
}

/**
 * The protocol's calls that move money or decide who gets it (a reverted or lost one counts against the target 0).
 * A report, a heartbeat, an assignment move none: a reverted one costs its sender gas (counted as a false action).
 */
export const MONEY_CALLS = new Set([
  "createJob",
  "createJobWithPermit",
  "acceptCheckpoint",
  "refuseCheckpoint",
  "refuseWithFault",
  "submitVerdict",
  "dispute",
  "resolveDispute",
  "settle",
  "cancel",
  "expire",
  "claimEarnings",
  "withdraw",
  "depositStake",
  "withdrawStake",
  "slashStake",
]);

/** Hardhat's test keys the keepers use, by address (the audit's names). */
export function keeperNames(): Record<string, string> {
  return { [addressOf(TEST_KEYS.coordinator)]: "keepers" };
}

function addressOf(key: string): string {
  return computeAddress(key).toLowerCase();
}

const possessive = (who: string) => (who.endsWith("s") ? `${who}'` : `${who}'s`);
const toHex = (n: number | bigint) => "0x" + n.toString(16);
const pct = (x: number) => `${Math.round(x * 100)} %`;
const gwei = (wei: bigint) => (Number(wei) / 1e9).toFixed(2);
