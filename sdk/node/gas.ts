/**
 * Gas limits for what this project sends. An exact estimate is not a safe limit for the escrow's calls, for two
 * reasons measured on a real node:
 * - the escrow's signature check falls back to the Safe's EIP-1271 check when a view of the Safe runs out of gas,
 *   so the cost is not monotonic in the limit;
 * - a report or heartbeat writes `block.timestamp` into slots that may already hold that same second (the last
 *   report, assignment or acceptance): a rewrite of an equal value costs 100 gas, a new one 2,900. A node estimates
 *   at its pending (anvil) or latest (geth) block's time, so an estimate made within the second of the previous write
 *   is 2,800 short per slot when the transaction lands a second later — and the transaction runs out of gas.
 */
import type { BaseContractMethod, ContractTransactionResponse } from "ethers";
import type { TypedContractMethod } from "../../types/ethers-contracts/common.ts";

/** The gas limit sent for `estimate`: a quarter over it. */
export function withGasHeadroom(estimate: bigint): bigint {
  return estimate + estimate / 4n;
}

/** Sends `method(...args)` with a limit a quarter over its estimate. */
export async function sendWithHeadroom<A extends unknown[]>(
  method: TypedContractMethod<A, unknown, "nonpayable">,
  ...args: A
): Promise<ContractTransactionResponse> {
  // Typed at the call (typechain checks `args` against the method); untyped here, where A is only generic.
  const untyped = method as unknown as BaseContractMethod;
  const estimate = await untyped.estimateGas(...args);
  return untyped.send(...args, { gasLimit: withGasHeadroom(estimate) });
}
