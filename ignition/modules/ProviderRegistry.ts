import { buildModule } from "@nomicfoundation/hardhat-ignition/modules";

/** The self-service provider registry. */
export default buildModule("ProviderRegistry", (m) => {
  const registry = m.contract("ProviderRegistry");
  return { registry };
});
