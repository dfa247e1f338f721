import { buildModule } from "@nomicfoundation/hardhat-ignition/modules";

/** Test USDC (6 decimals, permit, open faucet): local chains only. */
export default buildModule("TestUSDC", (m) => {
  const usdc = m.contract("TestUSDC");
  return { usdc };
});
