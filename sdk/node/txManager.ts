/**
 * Every transaction a key sends goes through its one `TxManager` (transactions on a real fee market).
 *
 * - **Nonces**: handed out here, one per intended call, in send order. Each send picks max(its own next nonce, the
 *   node's `pending` count) while holding the key's lock file (sdk/run/keyLock.ts), so another process on the same key
 *   (which picks under the same lock) is seen, never raced. A broadcast that fails leaves the next pick to the node.
 * - **Fees**: EIP-1559 with a cap, legacy gas price where the node has no base fee (rules: sdk/node/fees.ts; the node's
 *   answer: sdk/node/nodeFees.ts). A base fee above the cap: nothing is sent (`FeeAboveCapError`, retryable).
 * - **Speed-up**: `wait()` follows the transaction; a version not mined after the speed-up rule's blocks or time is
 *   signed again at the SAME nonce with fees raised 12.5 % (never above the cap), so at most one version can ever be
 *   mined and the call runs once. Whichever version is mined is the result.
 * - **Reorganisation**: a version whose receipt disappears (its block was replaced) is re-broadcast with the same
 *   signed bytes until it is mined again at the chain's confirmation depth (sdk/node/confirmations.ts); it can never run
 *   twice, because its nonce is the same.
 * - **Out of gas money**: one error line naming the address, its balance, what the send needs and how to fund it.
 * - **Nonce used by someone else** (a process on another machine with this key): the waiter fails with
 *   `NonceTakenError` (retryable: the call did not run; the caller decides again) and the manager resyncs.
 *
 * Wiring: `managedWallet(wallet, provider)` is a `Wallet` whose `sendTransaction` is the manager's (one per key and
 * provider connection in a process); contracts connected to it send through it unchanged, and `mined(tx)` waits
 * for a sent transaction the manager's way (ethers' own `tx.wait()` would wait for the first version's hash only).
 */
import {
  BaseWallet,
  formatEther,
  keccak256,
  makeError,
  resolveAddress,
  SigningKey,
  Wallet,
  type JsonRpcApiProvider,
  type Provider,
  type TransactionReceipt,
  type TransactionRequest,
  type TransactionResponse,
} from "ethers";
import { confirmationsFor } from "./confirmations.ts";
import { classifyError, describeError } from "./errors.ts";
import { readNodeFees } from "./nodeFees.ts";
import {
  bumped,
  describeFees,
  formatGwei,
  maxFeeFor,
  offer,
  speedUpDue,
  speedUpRule,
  worstCost,
  type Fees,
  type NodeFees,
  type SpeedUpRule,
} from "./fees.ts";
import { withGasHeadroom } from "./gas.ts";
import { withKeyLock } from "../run/keyLock.ts";
import { createLogger, type Logger } from "../run/log.ts";

export interface TxManagerOptions {
  /** The fee cap in wei (undefined: the network's default, sdk/node/fees.ts `maxFeeFor`; null: none). */
  maxFeeWei?: bigint | null;
  speedUp?: SpeedUpRule;
  /** Blocks on top before `wait()` resolves (default: sdk/node/confirmations.ts for the chain). */
  confirmations?: number;
  /** How often a pending transaction is looked at (default: the provider's polling interval). */
  pollMs?: number;
  logger?: Logger;
  lockDir?: string;
  nowMs?: () => number;
}

/** A send that the key's balance cannot pay for. Fatal for the call (sdk/node/errors.ts): fund the key, then retry. */
export class InsufficientFundsError extends Error {
  readonly code = "INSUFFICIENT_FUNDS";
}

/** The network's base fee is above the cap: nothing was sent. Retryable: it goes out once the fee falls. */
export class FeeAboveCapError extends Error {
  readonly code = "FEE_ABOVE_CAP";
}

/** Another transaction took this call's nonce (another process on the key): the call did not run. Retryable. */
export class NonceTakenError extends Error {
  readonly code = "NONCE_TAKEN";
}

interface Version {
  hash: string;
  raw: string;
  fees: Fees;
  sentBlock: number;
  sentMs: number;
}

type Body = { to?: string; data: string; value: bigint; gasLimit: bigint };

/** What `follow` carries from one look to the next. */
interface Look {
  say: (key: string, msg: string, f: Record<string, unknown>) => boolean;
  lastHead: string;
  /** The receipt seen last (a version mined, maybe not yet at depth). */
  seen?: TransactionReceipt;
}

/** What this process's managers did (for a run's report: `npm start --network rehearsal`, the bench). */
export const txStats = { sent: 0, speedUps: 0, atCap: 0, rebroadcasts: 0, nonceTaken: 0, outOfFunds: 0 };

/** One line of `txStats`. */
export function formatTxStats(s = txStats): string {
  return (
    `transactions: ${s.sent} sent, ${s.speedUps} sped up, ${s.atCap} held at the fee cap, ` +
    `${s.rebroadcasts} re-broadcast, ${s.nonceTaken} lost their nonce to another sender, ${s.outOfFunds} out of gas money`
  );
}

/** Sent hashes of this process → their managed transaction (bounded), for `mined()`. */
const tracked = new Map<string, ManagedTx>();
const TRACKED_MAX = 10_000;

function track(hash: string, tx: ManagedTx) {
  tracked.set(hash, tx);
  if (tracked.size > TRACKED_MAX) tracked.delete(tracked.keys().next().value!);
}

/** Waits for a sent transaction: the manager's way when one sent it (speed-ups, reorgs, depth), else ethers'. */
export async function mined(
  sent: Promise<TransactionResponse> | TransactionResponse,
  timeoutMs?: number,
): Promise<TransactionReceipt | null> {
  const tx = await sent;
  const managed = tracked.get(tx.hash);
  if (!managed) return tx.wait(1, timeoutMs);
  if (timeoutMs === undefined) return managed.wait();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(makeError(`transaction ${tx.hash} not mined within ${timeoutMs} ms`, "TIMEOUT", {})),
      timeoutMs,
    );
  });
  return Promise.race([managed.wait(), timeout]).finally(() => clearTimeout(timer));
}

/** One intended call: the versions signed for its nonce (the first, then speed-ups), and its one outcome. */
export class ManagedTx {
  /** The versions the node took, oldest first (the last one is what a speed-up bumps). */
  readonly versions: Version[] = [];
  /** Every version signed for this nonce, also one whose broadcast seemed to fail: any of them may be mined. */
  readonly signed: Version[] = [];
  private result?: Promise<TransactionReceipt>;
  private readonly manager: TxManager;
  readonly nonce: number;
  readonly body: Body;

  constructor(manager: TxManager, nonce: number, body: Body, first: Version) {
    this.manager = manager;
    this.nonce = nonce;
    this.body = body;
    this.versions.push(first);
    this.signed.push(first);
  }

  /** The hash of the first version (what the caller was handed). */
  get hash(): string {
    return this.versions[0].hash;
  }

  /** Resolves with the receipt of whichever version was mined, at the confirmation depth; throws on a revert. */
  wait(): Promise<TransactionReceipt> {
    this.result ??= this.manager.follow(this);
    return this.result;
  }
}

/** A wallet whose every transaction goes through its key's `TxManager`. */
export class ManagedWallet extends Wallet {
  readonly manager: TxManager;

  constructor(key: SigningKey, provider: Provider, options: TxManagerOptions = {}) {
    super(key, provider);
    this.manager = new TxManager(this, provider, options);
  }

  override connect(provider: Provider | null): Wallet {
    return provider ? managedWallet(new Wallet(this.signingKey), provider) : new Wallet(this.signingKey);
  }

  override async sendTransaction(tx: TransactionRequest): Promise<TransactionResponse> {
    return (await this.manager.send(tx)).response;
  }
}

const managers = new WeakMap<Provider, Map<string, ManagedWallet>>();

/** The one managed wallet of `wallet`'s key on `provider` in this process (the first call's options count). */
export function managedWallet(wallet: BaseWallet, provider: Provider, options: TxManagerOptions = {}): ManagedWallet {
  if (wallet instanceof ManagedWallet && wallet.provider === provider) return wallet;
  let byKey = managers.get(provider);
  if (!byKey) managers.set(provider, (byKey = new Map()));
  const address = wallet.address.toLowerCase();
  let managed = byKey.get(address);
  if (!managed) byKey.set(address, (managed = new ManagedWallet(wallet.signingKey, provider, options)));
  return managed;
}

const rpcOf = (p: Provider) => p as unknown as JsonRpcApiProvider;

export class TxManager {
  private next?: number;
  /** This process's call at each nonce it sent (the newest TRACKED_MAX). */
  private readonly byNonce = new Map<number, ManagedTx>();
  private queue: Promise<unknown> = Promise.resolve();
  private chain?: Promise<{ chainId: bigint; cap: bigint | undefined; depth: number }>;
  private readonly logger: Logger;
  private readonly rule: SpeedUpRule;
  private readonly nowMs: () => number;
  readonly signer: Wallet;
  readonly provider: Provider;
  private readonly o: TxManagerOptions;

  constructor(signer: Wallet, provider: Provider, o: TxManagerOptions = {}) {
    this.signer = signer;
    this.provider = provider;
    this.o = o;
    this.logger =
      o.logger ?? createLogger({ component: "tx", pretty: true, write: (l) => process.stderr.write(l + "\n") });
    this.rule = o.speedUp ?? speedUpRule();
    this.nowMs = o.nowMs ?? Date.now;
  }

  get address(): string {
    return this.signer.address;
  }

  private settings() {
    this.chain ??= this.provider.getNetwork().then(({ chainId }) => ({
      chainId,
      cap: this.o.maxFeeWei === null ? undefined : (this.o.maxFeeWei ?? maxFeeFor(chainId)),
      depth: this.o.confirmations ?? confirmationsFor(chainId),
    }));
    return this.chain;
  }

  /** Signs and broadcasts `req` at the next nonce of this key, one send at a time (in this process and across). */
  send(req: TransactionRequest): Promise<{ managed: ManagedTx; response: TransactionResponse }> {
    const run = () => this.sendNow(req);
    const next = this.queue.then(run, run);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async sendNow(req: TransactionRequest) {
    const { chainId, cap } = await this.settings();
    let body: Body, fees: Fees;
    let node: NodeFees;
    try {
      body = await this.bodyOf(req);
      node = await readNodeFees(this.provider);
      fees = offer(node, cap);
    } catch (err) {
      throw await this.explain(err); // an estimate from an empty account may already say "insufficient funds"
    }
    if (node.baseFee !== null && "maxFeePerGas" in fees && fees.maxFeePerGas < node.baseFee) {
      // A node refuses (anvil) or parks (geth) a transaction under the base fee: say so instead.
      throw new FeeAboveCapError(
        `not sent: the network's base fee (${formatGwei(node.baseFee)} gwei) is above the fee cap ` +
          `(${formatGwei(cap!)} gwei, --max-fee-gwei / GPUCHAIN_MAX_FEE_GWEI); it is sent once the fee falls, or raise the cap`,
      );
    }
    return withKeyLock(
      chainId,
      this.address,
      async () => {
        for (let attempt = 1; ; attempt++) {
          const pending = await this.provider.getTransactionCount(this.address, "pending");
          const nonce = req.nonce ?? ((await this.forgotten(pending)) ? pending : Math.max(this.next ?? 0, pending));
          let sent;
          try {
            sent = await this.broadcast(chainId, nonce, body, fees);
          } catch (err) {
            this.next = undefined; // the node says what is used next time
            // A sender this machine's lock cannot see took the nonce first: pick again from the node's count.
            if (req.nonce == null && attempt < 3 && isNonceUsed(err)) continue;
            throw await this.explain(err, body, fees);
          }
          if (req.nonce == null) this.next = nonce + 1;
          txStats.sent++;
          const managed = new ManagedTx(this, nonce, body, sent.version);
          track(sent.version.hash, managed);
          this.byNonce.set(nonce, managed);
          if (this.byNonce.size > TRACKED_MAX) this.byNonce.delete(this.byNonce.keys().next().value!);
          return { managed, response: sent.response };
        }
      },
      { dir: this.o.lockDir },
    );
  }

  /**
   * Whether the node forgot our transaction at `pending` while our own count runs ahead of it: a reorganisation
   * dropped it (anvil drops the removed blocks' transactions) and nobody follows it any more. Sending the next call
   * at our own count would leave a nonce gap the node never mines past; the call at `pending` takes the nonce
   * instead (the forgotten call did not run; a follower still waiting for it gets NonceTakenError). Found by the
   * rehearsal (demo/rehearsal.ts): the collector's acceptance sent again after a reorg sat behind such a gap.
   */
  private async forgotten(pending: number): Promise<boolean> {
    if (this.next === undefined || this.next <= pending) return false;
    const ours = this.byNonce.get(pending);
    if (!ours) return false; // not ours to judge (another process on the key, or too old)
    for (const v of ours.versions) if (await this.provider.getTransaction(v.hash)) return false;
    return true;
  }

  private async bodyOf(req: TransactionRequest): Promise<Body> {
    const to = req.to == null ? undefined : await resolveAddress(req.to, this.provider);
    const data = req.data ?? "0x";
    const value = req.value == null ? 0n : BigInt(req.value);
    const gasLimit =
      req.gasLimit != null
        ? BigInt(req.gasLimit)
        : withGasHeadroom(await this.provider.estimateGas({ from: this.address, to, data, value }));
    return { to, data, value, gasLimit };
  }

  private async broadcast(chainId: bigint, nonce: number, body: Body, fees: Fees, signed?: Version[]) {
    const type = "gasPrice" in fees ? 0 : 2;
    const raw = await this.signer.signTransaction({ ...body, ...fees, type, chainId, nonce });
    const version = { hash: keccak256(raw), raw, fees, sentBlock: await this.provider.getBlockNumber(), sentMs: 0 };
    signed?.push(version); // looked for even if the broadcast seems to fail (its answer may have been lost)
    let response: TransactionResponse;
    try {
      response = await this.provider.broadcastTransaction(raw);
    } catch (err) {
      // An answer lost after the node took it: the node having it is a success.
      const known = await this.provider.getTransaction(version.hash).catch(() => null);
      if (!known) throw err;
      response = known;
    }
    version.sentMs = this.nowMs();
    return { version, response };
  }

  /** A broadcast error as the caller should see it: out of gas money gets its one clear line. */
  private async explain(err: unknown, body?: Body, fees?: Fees): Promise<unknown> {
    if (!isInsufficientFunds(err)) return err;
    txStats.outOfFunds++;
    const { chainId } = await this.settings();
    const balance = await this.provider.getBalance(this.address).catch(() => undefined);
    const need =
      body && fees
        ? `up to ${formatEther(worstCost(fees, body.gasLimit, body.value))} ETH (gas limit ${body.gasLimit} × ` +
          `${describeFees(fees)}${body.value ? ` + value ${formatEther(body.value)}` : ""})`
        : "more than that (the node refused to estimate it)";
    const how =
      chainId === 31337n
        ? `fund it: gpuchain faucet ${this.address} --rpc URL`
        : `send ETH to ${this.address} on chain ${chainId} (a faucet for a test network)`;
    return new InsufficientFundsError(
      `out of gas money: ${this.address} holds ${balance === undefined ? "an unknown amount of" : formatEther(balance)} ETH, ` +
        `this send needs ${need}; ${how}`,
    );
  }

  /** Follows `tx` to its outcome: speed-ups, re-broadcasts after a reorganisation, the confirmation depth. */
  async follow(tx: ManagedTx): Promise<TransactionReceipt> {
    const pollMs = this.o.pollMs ?? (rpcOf(this.provider).pollingInterval || 1000);
    const state: Look = { say: onceLogger(this.logger), lastHead: "" };
    for (;;) {
      if ((this.provider as { destroyed?: boolean }).destroyed) throw makeError("provider destroyed", "UNKNOWN_ERROR");
      try {
        const receipt = await this.look(tx, state);
        if (receipt) return checked(receipt, tx);
      } catch (err) {
        // A read that failed is unknown: look again (the caller's own timeout bounds its wait, not this loop).
        if (err instanceof NonceTakenError || classifyError(err, emptyIface) !== "retryable") throw err;
        state.say(`rpc:${tx.hash}`, "cannot read the chain now; looking again", { hash: tx.hash, error: msg(err) });
        state.lastHead = "";
      }
      // Not unref'd: a process whose only work left is this wait (an agent registering on a chain that mines every
      // 2 s) must stay alive until the transaction is mined, not exit 0 with it pending (found by the rehearsal).
      await new Promise((r) => setTimeout(r, pollMs));
    }
  }

  /** One look at `tx` on a new head: its receipt once at depth; else re-broadcast or speed up as needed. */
  private async look(tx: ManagedTx, state: Look): Promise<TransactionReceipt | undefined> {
    const { chainId, cap, depth } = await this.settings();
    const head = await this.provider.getBlock("latest");
    if (!head) return undefined;
    if (head.hash === state.lastHead) {
      if (!state.seen) await this.maybeSpeedUp(tx, chainId, cap, head.number, state.say); // blocks stalled: time rule
      return undefined;
    }
    state.lastHead = head.hash!;
    const receipt = await this.receiptOf(tx);
    if (receipt) {
      // A lagging backend may still serve a receipt from a replaced block: only a canonical one counts.
      if ((await this.provider.getBlock(receipt.blockNumber))?.hash !== receipt.blockHash) return undefined;
      state.seen = receipt;
      return receipt.blockNumber <= head.number - depth ? receipt : undefined;
    }
    if (state.seen) {
      // Its block was replaced: the same bytes again (same nonce: it can run only once).
      const v = tx.signed.find((x) => x.hash === state.seen!.hash) ?? tx.versions.at(-1)!;
      this.logger.warn("transaction dropped by a reorganisation; re-broadcast", { hash: v.hash, nonce: tx.nonce });
      await this.rebroadcast(v.raw);
      v.sentBlock = head.number;
      v.sentMs = this.nowMs();
      state.seen = undefined;
      return undefined;
    }
    if ((await this.provider.getTransactionCount(this.address, "latest")) > tx.nonce) {
      // Our nonce is used: by one of our versions mined since the receipts were read, or by another sender.
      if (await this.receiptOf(tx)) {
        state.lastHead = ""; // read it next round
        return undefined;
      }
      this.next = undefined;
      txStats.nonceTaken++;
      throw new NonceTakenError(
        `nonce ${tx.nonce} of ${this.address} was used by another transaction (another process on this key?); ` +
          `this call (${tx.hash}) did not run`,
      );
    }
    if (await this.maybeSpeedUp(tx, chainId, cap, head.number, state.say)) return undefined;
    const last = tx.versions.at(-1)!;
    if (!(await this.provider.getTransaction(last.hash))) {
      // Not in the node's pool nor mined: a reorganisation took it before we saw it mined, or the pool dropped it
      // (anvil drops a transaction under the base fee at the next block; the speed-up rule then re-prices it).
      state.say(`unknown:${last.hash}`, "transaction unknown to the node; re-broadcast", {
        hash: last.hash,
        nonce: tx.nonce,
      });
      await this.rebroadcast(last.raw);
    }
    return undefined;
  }

  private async receiptOf(tx: ManagedTx): Promise<TransactionReceipt | null> {
    for (const { hash } of [...tx.signed].reverse()) {
      const r = await this.provider.getTransactionReceipt(hash);
      if (r) return r;
    }
    return null;
  }

  private async maybeSpeedUp(
    tx: ManagedTx,
    chainId: bigint,
    cap: bigint | undefined,
    head: number,
    say: (key: string, msg: string, f: Record<string, unknown>) => boolean,
  ): Promise<boolean> {
    const last = tx.versions.at(-1)!;
    if (!speedUpDue({ block: last.sentBlock, ms: last.sentMs }, { head, ms: this.nowMs() }, this.rule)) return false;
    const node = await readNodeFees(this.provider);
    const fees = bumped(last.fees, node, cap);
    // The cap leaves no bump a node takes: under +10 %, or under the base fee (anvil refuses it, geth parks it).
    if (!fees || ("maxFeePerGas" in fees && node.baseFee !== null && fees.maxFeePerGas < node.baseFee)) {
      const first = say(`cap:${tx.hash}`, "transaction not mined and held at the fee cap: keeps waiting", {
        hash: tx.hash,
        nonce: tx.nonce,
        fees: describeFees(last.fees),
        baseFee: node.baseFee === null ? "none" : `${formatGwei(node.baseFee)} gwei`,
        cap: cap === undefined ? "none" : `${formatGwei(cap)} gwei (--max-fee-gwei)`,
      });
      if (first) txStats.atCap++;
      last.sentBlock = head; // look again after another round of the rule
      last.sentMs = this.nowMs();
      return false;
    }
    try {
      const { version } = await this.broadcast(chainId, tx.nonce, tx.body, fees, tx.signed);
      tx.versions.push(version);
      track(version.hash, tx);
      txStats.speedUps++;
      this.logger.warn("transaction not mined: re-sent at the same nonce with higher fees", {
        nonce: tx.nonce,
        first: tx.hash,
        replacement: version.hash,
        fees: describeFees(fees),
      });
      return true;
    } catch (err) {
      // Underpriced for the node's rule, or mined meanwhile ("nonce too low"): the next look decides.
      say(`bump:${tx.hash}`, "speed-up not accepted by the node; keeps waiting", {
        hash: tx.hash,
        error:
          (await this.explain(err, tx.body, fees)) instanceof InsufficientFundsError ? "insufficient funds" : msg(err),
      });
      last.sentBlock = head;
      last.sentMs = this.nowMs();
      return false;
    }
  }

  /** Sends signed bytes again; any error ("already known", a refusal, an outage) is for the next look to judge. */
  private async rebroadcast(raw: string) {
    txStats.rebroadcasts++;
    await this.provider.broadcastTransaction(raw).catch(() => undefined);
  }
}

const emptyIface = { parseError: () => null } as unknown as Parameters<typeof classifyError>[1];
const msg = (err: unknown) => describeError(err, emptyIface);

function checked(receipt: TransactionReceipt, tx: ManagedTx): TransactionReceipt {
  if (receipt.status !== 0) return receipt;
  throw makeError("transaction execution reverted", "CALL_EXCEPTION", {
    action: "sendTransaction",
    data: null,
    reason: null,
    invocation: null,
    revert: null,
    transaction: { to: tx.body.to ?? null, from: receipt.from, data: "" },
    receipt,
  });
}

function isNonceUsed(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  return (
    e?.code === "NONCE_EXPIRED" ||
    /nonce too low|already known|replacement transaction underpriced/i.test(`${e?.message}`)
  );
}

function isInsufficientFunds(err: unknown): boolean {
  const e = err as { code?: string; message?: string; shortMessage?: string; error?: { message?: string } };
  if (e?.code === "INSUFFICIENT_FUNDS") return true;
  // geth and anvil say "insufficient funds"; Hardhat's node "Sender doesn't have enough funds to send tx" (which
  // ethers cannot classify: "could not coalesce error").
  return /insufficient funds|funds for gas|lack of funds|doesn't have enough funds/i.test(
    `${e?.message} ${e?.shortMessage} ${e?.error?.message}`,
  );
}

/** Logs each key's line once (true: logged now). */
function onceLogger(logger: Logger) {
  const said = new Set<string>();
  return (key: string, m: string, f: Record<string, unknown>): boolean => {
    if (said.has(key)) return false;
    said.add(key);
    logger.warn(m, f);
    return true;
  };
}
