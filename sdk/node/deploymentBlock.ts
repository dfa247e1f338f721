/**
 * Where to start reading a deployment's events. A public chain read from block 0 costs thousands of `eth_getLogs`
 * calls, each one a chance of a 429, so, in order:
 * 1. the block of the deployment's first transaction, when Ignition's journal recorded it (sdk/node/deployment.ts): no
 *    read at all;
 * 2. else the first block holding the escrow's code (a binary search of `eth_getCode`, about log2(head) reads), less
 *    a margin for the contracts deployed just before it;
 * 3. else block 0, when the node keeps no state that old (a pruned full node answers the head but not an old
 *    block's `eth_getCode`): reading more logs than needed costs calls, reading fewer would miss events.
 */
import type { Provider } from "ethers";

/** The registry and the rest of the deployment may land a few blocks before the escrow. */
export const DEPLOYMENT_MARGIN_BLOCKS = 50;

/**
 * The first block worth reading the deployment's events from, at or below `head`; `firstBlock`: the journal's, when
 * known. An error when `head` holds no code at `address`, or when the node stops answering.
 */
export async function deploymentStartBlock(
  provider: Provider,
  address: string,
  head: number,
  firstBlock?: number,
): Promise<number> {
  const hasCode = async (b: number) => (await provider.getCode(address, b)) !== "0x";
  if (!(await hasCode(head))) throw new Error(`no escrow contract at ${address} on this chain (block ${head})`);
  if (firstBlock !== undefined && firstBlock <= head) return firstBlock;
  let lo = 0;
  let hi = head;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    let code: boolean;
    try {
      code = await hasCode(mid);
    } catch (err) {
      // The node answering the head again but not `mid` keeps no state that old; one not answering is down.
      await hasCode(head).catch(() => Promise.reject(err));
      return 0;
    }
    if (code) hi = mid;
    else lo = mid + 1;
  }
  return Math.max(0, lo - DEPLOYMENT_MARGIN_BLOCKS);
}
