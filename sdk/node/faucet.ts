/**
 * Test ETH on a development node (anvil, a Hardhat node): its own balance-setting method, which a public node does
 * not have. Used by `gpuchain faucet ADDRESS` and by `gpuchain provide --faucet`, the dashboard's command on a local
 * chain (a copied command must not wait for gas forever). Nothing here runs on a public network: there the
 * node answers "method not found" and the caller says what to do instead.
 */
import { toBeHex, type JsonRpcProvider } from "ethers";

/** The node is not a development node: the caller tells the person to send ETH from a funded key. */
export class NotADevNodeError extends Error {
  constructor() {
    super(
      "this node is not a development node (it has no anvil_setBalance or hardhat_setBalance): " +
        "send test ETH to the address from a funded key instead",
    );
  }
}

/** anvil_setBalance (anvil), else hardhat_setBalance (a Hardhat node; anvil knows it too). */
export async function setDevBalance(provider: Pick<JsonRpcProvider, "send">, to: string, wei: bigint): Promise<void> {
  for (const method of ["anvil_setBalance", "hardhat_setBalance"]) {
    try {
      await provider.send(method, [to, toBeHex(wei)]);
      return;
    } catch (err) {
      // Only a JSON-RPC error answer means "not this node's dialect"; a node that did not answer (down, 429s past
      // the timeout) is not a public node: its error goes up as it is.
      if (typeof (err as { error?: { code?: unknown } })?.error?.code !== "number") throw err;
    }
  }
  throw new NotADevNodeError();
}
