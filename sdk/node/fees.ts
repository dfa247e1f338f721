/**
 * The fee rules of every transaction this project sends, pure: what to offer (EIP-1559 with a cap,
 * legacy where the node has no base fee), when a transaction that is not mined is re-sent at the same nonce, and
 * what the re-sent version offers. The I/O (reading the node's fees, signing, broadcasting) is sdk/node/txManager.ts.
 *
 * - **Offer**: tip = the node's `eth_maxPriorityFeePerGas`; max fee = 2 × base fee + tip (the base fee can rise
 *   12.5 % a block, so 2× survives six full blocks in a row); both at most the cap.
 * - **Cap** (`--max-fee-gwei`, `GPUCHAIN_MAX_FEE_GWEI`): the most a key pays per gas, tip included. Defaults: none
 *   on a local chain (31337: as before this rule), 5 gwei on Base Sepolia and Base (their base fee is usually well
 *   under 0.1 gwei; 5 gwei is a spike of 50×), 200 gwei on any other chain.
 * - **Speed-up**: a version not mined after `afterBlocks` blocks (3) or `afterMs` (60 s, for a chain whose blocks
 *   stalled), whichever comes first, is replaced at the same nonce with both fees raised 12.5 % (geth and anvil
 *   accept a replacement only at +10 % on both), or to the node's current offer if that is higher; never above the
 *   cap. A bump the cap holds under +10 % is not sent (the node would refuse it): the transaction keeps waiting.
 */
import { formatUnits, parseUnits } from "ethers";

export const MAX_FEE_ENV = "GPUCHAIN_MAX_FEE_GWEI";
export const SPEED_UP_BLOCKS_ENV = "GPUCHAIN_SPEED_UP_BLOCKS";
export const SPEED_UP_MS_ENV = "GPUCHAIN_SPEED_UP_MS";

/** Default cap per chain id in gwei; a chain not listed gets OTHER_CHAIN_MAX_FEE_GWEI; local chains none. */
export const DEFAULT_MAX_FEE_GWEI: Readonly<Record<string, string | undefined>> = {
  "31337": undefined,
  "84532": "5",
  "8453": "5",
};
export const OTHER_CHAIN_MAX_FEE_GWEI = "200";

export const DEFAULT_SPEED_UP_BLOCKS = 3;
export const DEFAULT_SPEED_UP_MS = 60_000;

/** Per mille a replacement raises each fee by: +12.5 % (nodes require ≥ 10 %). */
export const BUMP_PER_MILLE = 125n;
/** The least raise a node accepts for a replacement, per mille. */
export const REPLACEMENT_MIN_PER_MILLE = 100n;

export type Fees = { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint } | { gasPrice: bigint };

/** Pure: a cap typed in gwei ("12", "0.5") as wei; throws one line on anything else. */
export function parseMaxFeeGwei(value: string, where: string): bigint {
  const v = value.trim();
  if (!/^\d+(\.\d{1,9})?$/.test(v) || /^0+(\.0*)?$/.test(v)) {
    throw new Error(`${where} must be a positive number of gwei (e.g. 5 or 0.5), got "${value}"`);
  }
  return parseUnits(v, "gwei");
}

/** The process's `--max-fee-gwei` (sdk/run/args.ts `parseCommand` sets it for every manager made after). */
let flagGwei: string | undefined;

/** Sets the process's cap from `--max-fee-gwei` (validated here: a bad value throws its one line). */
export function configureFees(o: { maxFeeGwei?: string }): void {
  if (o.maxFeeGwei !== undefined) parseMaxFeeGwei(o.maxFeeGwei, "--max-fee-gwei");
  flagGwei = o.maxFeeGwei;
}

/** The cap for `chainId` in wei: the flag's, else the environment's, else the network's default (undefined: none). */
export function maxFeeFor(
  chainId: bigint | number,
  explicitGwei: string | undefined = flagGwei,
  env: Record<string, string | undefined> = process.env,
): bigint | undefined {
  if (explicitGwei !== undefined) return parseMaxFeeGwei(explicitGwei, "--max-fee-gwei");
  const fromEnv = env[MAX_FEE_ENV];
  if (fromEnv !== undefined && fromEnv !== "") return parseMaxFeeGwei(fromEnv, MAX_FEE_ENV);
  const key = String(chainId);
  if (key in DEFAULT_MAX_FEE_GWEI) {
    const gwei = DEFAULT_MAX_FEE_GWEI[key];
    return gwei === undefined ? undefined : parseUnits(gwei, "gwei");
  }
  return parseUnits(OTHER_CHAIN_MAX_FEE_GWEI, "gwei");
}

const min = (a: bigint, cap?: bigint) => (cap !== undefined && a > cap ? cap : a);
const max = (a: bigint, b: bigint) => (a > b ? a : b);

/** What the node says about fees now: the next block's base fee (null: a legacy chain), its tip, its gas price. */
export interface NodeFees {
  baseFee: bigint | null;
  tip: bigint;
  gasPrice: bigint;
}

/** Pure: the first offer for a transaction. */
export function offer(node: NodeFees, cap?: bigint): Fees {
  if (node.baseFee === null) return { gasPrice: min(node.gasPrice, cap) };
  const maxFeePerGas = min(2n * node.baseFee + node.tip, cap);
  return { maxFeePerGas, maxPriorityFeePerGas: min(node.tip, maxFeePerGas) };
}

const raised = (v: bigint, perMille: bigint) => v + (v * perMille + 999n) / 1000n;

/**
 * Pure: the fees of a replacement for a version sent with `prev`, at least +12.5 % on each fee (or the node's
 * offer now, if higher), at most the cap; null when the cap leaves less than the +10 % the node needs.
 */
export function bumped(prev: Fees, node: NodeFees, cap?: bigint): Fees | null {
  const now = offer(node, cap);
  if ("gasPrice" in prev) {
    const nowPrice = "gasPrice" in now ? now.gasPrice : now.maxFeePerGas;
    const gasPrice = min(max(raised(prev.gasPrice, BUMP_PER_MILLE), nowPrice), cap);
    return gasPrice >= raised(prev.gasPrice, REPLACEMENT_MIN_PER_MILLE) ? { gasPrice } : null;
  }
  const nowFee = "gasPrice" in now ? now.gasPrice : now.maxFeePerGas;
  const nowTip = "gasPrice" in now ? now.gasPrice : now.maxPriorityFeePerGas;
  const maxFeePerGas = min(max(raised(prev.maxFeePerGas, BUMP_PER_MILLE), nowFee), cap);
  const maxPriorityFeePerGas = min(max(raised(prev.maxPriorityFeePerGas, BUMP_PER_MILLE), nowTip), maxFeePerGas);
  const enough =
    maxFeePerGas >= raised(prev.maxFeePerGas, REPLACEMENT_MIN_PER_MILLE) &&
    maxPriorityFeePerGas >= raised(prev.maxPriorityFeePerGas, REPLACEMENT_MIN_PER_MILLE);
  return enough ? { maxFeePerGas, maxPriorityFeePerGas } : null;
}

/** The most a version with `fees` and `gasLimit` can cost in gas, plus the value it carries. */
export function worstCost(fees: Fees, gasLimit: bigint, value = 0n): bigint {
  return gasLimit * ("gasPrice" in fees ? fees.gasPrice : fees.maxFeePerGas) + value;
}

export interface SpeedUpRule {
  afterBlocks: number;
  afterMs: number;
}

/** The speed-up rule: the environment's, else the defaults (3 blocks / 60 s). */
export function speedUpRule(env: Record<string, string | undefined> = process.env): SpeedUpRule {
  const num = (name: string, fallback: number) => {
    const v = env[name];
    if (v === undefined || v === "") return fallback;
    if (!/^\d+$/.test(v.trim()) || Number(v) === 0) throw new Error(`${name} must be a whole number ≥ 1, got "${v}"`);
    return Number(v);
  };
  return {
    afterBlocks: num(SPEED_UP_BLOCKS_ENV, DEFAULT_SPEED_UP_BLOCKS),
    afterMs: num(SPEED_UP_MS_ENV, DEFAULT_SPEED_UP_MS),
  };
}

/**
 * Pure: is a version sent at block `sentBlock` and time `sentMs`, still not mined at `head`/`nowMs`, due for a
 * replacement? Yes from `afterBlocks` blocks after it on (t − 1: no, t: yes), or from `afterMs` on.
 */
export function speedUpDue(
  sent: { block: number; ms: number },
  now: { head: number; ms: number },
  rule: SpeedUpRule,
): boolean {
  return now.head - sent.block >= rule.afterBlocks || now.ms - sent.ms >= rule.afterMs;
}

/** Wei as gwei, without trailing zeros ("5", "0.875"). */
export function formatGwei(wei: bigint): string {
  return formatUnits(wei, "gwei").replace(/\.0$/, "");
}

/** Fees in words, for log lines and errors. */
export function describeFees(f: Fees): string {
  return "gasPrice" in f
    ? `gas price ${formatGwei(f.gasPrice)} gwei`
    : `max fee ${formatGwei(f.maxFeePerGas)} gwei (tip ${formatGwei(f.maxPriorityFeePerGas)})`;
}
