/**
 * What the node says about fees now: the next block's base fee (`eth_feeHistory`'s last entry, which
 * follows a spike at once), its tip (`eth_maxPriorityFeePerGas`), and the gas price where the chain has no base
 * fee. A read that failed is unknown (thrown); only a node without a method falls back. The rules: sdk/node/fees.ts.
 */
import type { JsonRpcApiProvider, Provider } from "ethers";
import { classifyError } from "./errors.ts";
import type { NodeFees } from "./fees.ts";

const emptyIface = { parseError: () => null } as unknown as Parameters<typeof classifyError>[1];

/** The fee tip when the node has no `eth_maxPriorityFeePerGas`: 1 gwei, as ethers assumes. */
const DEFAULT_TIP = 1_000_000_000n;

export async function readNodeFees(provider: Provider): Promise<NodeFees> {
  const rpc = provider as unknown as JsonRpcApiProvider;
  const answerOrNull = async <T>(p: Promise<T>): Promise<T | null> => {
    try {
      return await p;
    } catch (err) {
      if (classifyError(err, emptyIface) === "retryable") throw err; // unknown, not "none"
      return null; // the node has no such method
    }
  };
  const history = await answerOrNull(
    rpc.send("eth_feeHistory", ["0x1", "latest", []]) as Promise<{ baseFeePerGas?: string[] }>,
  );
  const next = history?.baseFeePerGas?.at(-1);
  const baseFee = next != null ? BigInt(next) : ((await provider.getBlock("latest"))?.baseFeePerGas ?? null);
  if (baseFee === null) return { baseFee: null, tip: 0n, gasPrice: BigInt(await rpc.send("eth_gasPrice", [])) };
  const tip = await answerOrNull(rpc.send("eth_maxPriorityFeePerGas", []) as Promise<string>);
  return { baseFee, tip: tip != null ? BigInt(tip) : DEFAULT_TIP, gasPrice: 0n };
}
