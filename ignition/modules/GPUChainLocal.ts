import { buildModule } from "@nomicfoundation/hardhat-ignition/modules";
import { addJobEscrow } from "./JobEscrow.ts";
import Multicall3Module from "./Multicall3.ts";
import TestUSDCModule from "./TestUSDC.ts";

/**
 * The whole protocol on a local chain: test USDC, registry, verifier Safe and escrow, plus Multicall3 (public
 * chains already have it at its canonical address). Tests deploy this too.
 */
export default buildModule("GPUChainLocal", (m) => {
  const { usdc } = m.useModule(TestUSDCModule);
  const protocol = { usdc, ...addJobEscrow(m, usdc) };
  const { multicall3 } = m.useModule(Multicall3Module);
  return { ...protocol, multicall3 };
});
