import { buildModule } from "@nomicfoundation/hardhat-ignition/modules";
import { addJobEscrow } from "./JobEscrow.ts";

/** The protocol on a public test network (Base Sepolia): the test USDC already exists; `usdc` names it. */
export default buildModule("GPUChain", (m) => {
  const usdc = m.contractAt("IERC20", m.getParameter<string>("usdc"));
  return { usdc, ...addJobEscrow(m, usdc) };
});
