/**
 * Where to start reading a deployment's events: the first block holding the escrow's code (a binary search of
 * `eth_getCode`, about log2(head) reads), less a margin for the contracts deployed just before it. A public chain
 * read from block 0 costs thousands of `eth_getLogs` calls, each one a chance of a 429.
 */
import type { Provider } from "ethers";

/** The registry and the rest of the deployment may land a few blocks before the escrow. */
export const DEPLOYMENT_MARGIN_BLOCKS = 50;

/** The first block at or below `head` with code at `address`, less the margin; an error when `head` has none. */
export async function deploymentStartBlock(provider: Provider, address: string, head: number): Promise<number> {
  const hasCode = async (b: number) => (await provider.getCode(address, b)) !== "0x";
  if (!(await hasCode(head))) throw new Error(`no escrow contract at ${address} on this chain (block ${head})`);
  let lo = 0;
  let hi = head;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (await hasCode(mid)) hi = mid;
    else lo = mid + 1;
  }
  return Math.max(0, lo - DEPLOYMENT_MARGIN_BLOCKS);
}
