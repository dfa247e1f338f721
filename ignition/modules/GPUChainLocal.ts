import { buildModule } from "@nomicfoundation/hardhat-ignition/modules";
import { addJobEscrow } from "./JobEscrow.ts";
import TestUSDCModule from "./TestUSDC.ts";

/** The whole protocol on a local chain: test USDC, registry, verifier Safe and escrow. Tests deploy this too. */
export default buildModule("GPUChainLocal", (m) => {
  const { usdc } = m.useModule(TestUSDCModule);
  return { usdc, ...addJobEscrow(m, usdc) };
});
