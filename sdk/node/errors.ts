/**
 * Classifies what went wrong with a chain call, so keepers and the agent can decide: retry (the RPC was down),
 * warn (another keeper got there first: an expected race), or fail loudly.
 */
import type { Interface } from "ethers";
import { faultOf } from "./rpc.ts";
import { formatUsdc } from "../words/format.ts";

export type ErrorClass = "retryable" | "race" | "fatal";

/** Custom errors that mean "the state moved on before our transaction landed". */
const RACE_ERRORS = new Set([
  "JobEscrowUnexpectedStatus",
  "JobEscrowStaleEpoch",
  "JobEscrowNoSuchPendingCheckpoint",
  "JobEscrowCheckpointPending",
  "JobEscrowNotAssignee",
  "JobEscrowNoEarnings",
  "JobEscrowNothingOwed",
]);

const RETRYABLE_CODES = new Set([
  "NETWORK_ERROR",
  "TIMEOUT",
  "SERVER_ERROR",
  "ECONNREFUSED",
  "ECONNRESET",
  "UND_ERR_SOCKET",
  // sdk/node/txManager.ts: another sender took the call's nonce, so it did not run; deciding again is safe. And a base
  // fee above the cap: nothing was sent; later, with the fee lower, it is.
  "NONCE_TAKEN",
  "FEE_ABOVE_CAP",
]);

export interface DecodedError {
  name: string;
  args: unknown[];
}

/** The custom error a revert carries, decoded with the contract's ABI, if any. */
export function decodeCustomError(err: unknown, iface: Interface): DecodedError | undefined {
  const data = findRevertData(err);
  if (!data) return undefined;
  try {
    const parsed = iface.parseError(data);
    return parsed ? { name: parsed.name, args: [...parsed.args] } : undefined;
  } catch {
    return undefined;
  }
}

export function classifyError(err: unknown, iface: Interface): ErrorClass {
  const decoded = decodeCustomError(err, iface);
  if (decoded) return RACE_ERRORS.has(decoded.name) ? "race" : "fatal";
  // Any transport fault sdk/node/rpc.ts knows (429, 5xx, reset, a truncated body…), also once its retries are spent.
  if (faultOf(err)) return "retryable";
  const e = err as { code?: string; cause?: { code?: string }; message?: string };
  if (e?.code && RETRYABLE_CODES.has(e.code)) return "retryable";
  if (e?.cause?.code && RETRYABLE_CODES.has(e.cause.code)) return "retryable";
  if (/ECONNREFUSED|ECONNRESET|socket hang up|fetch failed|timeout|could not detect network/i.test(e?.message ?? "")) {
    return "retryable";
  }
  return "fatal";
}

/**
 * What nodes say when they no longer keep the state of the block asked for (a pruned, non-archive node): anvil
 * `BlockOutOfRangeError` (-32602), geth and its forks "missing trie node" / "header not found", Erigon "old data not
 * available due to pruning", reth "state at block … is pruned", and "historical state … is not available".
 */
const STATE_PRUNED =
  /BlockOutOfRange|missing trie node|header not found|old data not available|state at block \S+ is pruned|(historical )?state (\S+ )*is not available/i;

/**
 * The node's own message when the call failed because the node no longer keeps that block's state, else undefined.
 * ethers reports such an `eth_call` as "missing revert data", which reads like a revert: it is not one, and asking
 * again will not help (ask a node that keeps history, or read at a recent block).
 */
export function prunedStateMessage(err: unknown, depth = 0): string | undefined {
  if (!err || typeof err !== "object" || depth > 5) return undefined;
  const e = err as Record<string, unknown>;
  // the node's own words first: ethers' wrapper quotes them in a longer message
  for (const key of ["error", "info", "cause"]) {
    const found = prunedStateMessage(e[key], depth + 1);
    if (found) return found;
  }
  return typeof e.message === "string" && STATE_PRUNED.test(e.message) ? e.message : undefined;
}

/** One line describing the error: the custom error and its values when there is one. */
export function describeError(err: unknown, iface: Interface): string {
  const decoded = decodeCustomError(err, iface);
  if (decoded) return `${decoded.name}(${decoded.args.map(String).join(", ")})`;
  const pruned = prunedStateMessage(err);
  if (pruned)
    return `the node no longer keeps the state of the block asked for (a pruned, non-archive node): ${pruned}`;
  const e = err as { shortMessage?: string; message?: string };
  return e?.shortMessage ?? e?.message ?? String(err);
}

/**
 * For a person at a command line: describeError, and after it what the error means in their terms when it is one a
 * person causes (the wrong key for a role, too little USDC): "JobEscrowNotArbiter(0xab…, 0xcd…): only the
 * escrow's arbiter 0xcd… may resolve a dispute; this key is 0xab…". The error's own name and values stay first, as
 * an auditor reads them in the contract.
 */
export function explainError(err: unknown, iface: Interface): string {
  const decoded = decodeCustomError(err, iface);
  const hint = decoded && revertHint(decoded);
  return hint ? `${describeError(err, iface)}: ${hint}` : describeError(err, iface);
}

/** What a role or funds error means for whoever sent the transaction; undefined for the others. Pure. */
export function revertHint({ name, args }: DecodedError): string | undefined {
  const a = args.map(String);
  const usdc = (i: number) => formatUsdc(BigInt(a[i]));
  switch (name) {
    case "JobEscrowNotClient":
      return `only job ${a[0]}'s client ${a[2]} may do this; this key is ${a[1]}`;
    case "JobEscrowNotArbiter":
      return `only the escrow's arbiter ${a[1]} may resolve a dispute; this key is ${a[0]}`;
    case "JobEscrowNotCoordinator":
      return `only the coordinator keeper ${a[1]} may do this; this key is ${a[0]}`;
    case "JobEscrowNotAssignee":
      return `only job ${a[0]}'s current provider ${a[2]} may do this; this key is ${a[1]}`;
    case "OwnableUnauthorizedAccount":
      return `only the contract's owner may do this; this key is ${a[0]}`;
    case "ERC20InsufficientBalance":
      return `${a[0]} holds ${usdc(1)} and this needs ${usdc(2)} (on a development chain: gpuchain faucet)`;
    case "ERC20InsufficientAllowance":
      return `the escrow may spend ${usdc(1)} of this key's USDC and this needs ${usdc(2)}`;
    case "JobEscrowBondNotApproved":
      return `the escrow may spend ${usdc(1)} of this key's USDC and the dispute bond is ${usdc(2)}`;
    case "ProviderRegistryNotRegistered":
      return `${a[0]} is not a registered provider (gpuchain provide registers it)`;
    default:
      return undefined;
  }
}

function findRevertData(err: unknown, depth = 0): string | undefined {
  if (!err || typeof err !== "object" || depth > 5) return undefined;
  const e = err as Record<string, unknown>;
  if (typeof e.data === "string" && e.data.startsWith("0x") && e.data.length >= 10) return e.data;
  for (const key of ["error", "info", "cause", "revert"]) {
    const found = findRevertData(e[key], depth + 1);
    if (found) return found;
  }
  return undefined;
}
