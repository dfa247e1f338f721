import { buildModule } from "@nomicfoundation/hardhat-ignition/modules";
import { Interface } from "ethers";
import { MULTICALL3_ABI, MULTICALL3_BYTECODE } from "../../sdk/node/multicall3Code.ts";

/**
 * Multicall3 on a local chain, from its canonical bytecode (public chains have it at MULTICALL3_ADDRESS already:
 * sdk/node/deployment.ts falls back to that address when deployed_addresses.json has no Multicall3). The keepers batch
 * their reads through it (sdk/node/multicall.ts).
 */
export default buildModule("Multicall3", (m) => {
  const multicall3 = m.contract("Multicall3", {
    _format: "hh3-artifact-1",
    contractName: "Multicall3",
    sourceName: "Multicall3.sol",
    abi: JSON.parse(Interface.from(MULTICALL3_ABI).formatJson()),
    bytecode: MULTICALL3_BYTECODE,
    deployedBytecode: "0x",
    linkReferences: {},
    deployedLinkReferences: {},
  });
  return { multicall3 };
});
