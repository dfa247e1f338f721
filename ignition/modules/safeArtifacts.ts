import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const root = "@safe-global/safe-contracts/build/artifacts/contracts";

/**
 * One prebuilt artifact, relabelled in Hardhat 3's artifact format as `npx hardhat ignition migrate` does (the npm
 * package ships Hardhat 2's `hh-sol-artifact-1`). Ignition copies each artifact into the deployment folder and, on
 * the next `ignition deploy` to that folder (a restarted chain, `--reset` included), refuses a Hardhat 2 one with
 * HHE10002 before it would wipe or reuse the folder. The bytecode and ABI are unchanged.
 */
function load(file: string) {
  const artifact = require(`${root}/${file}`);
  return { ...artifact, _format: "hh3-artifact-1", inputSourceName: artifact.sourceName, immutableReferences: {} };
}

/** The prebuilt Safe v1.4.1 artifacts, loaded from the audited npm package rather than recompiled. */
export const safeArtifacts = {
  SafeL2: load("SafeL2.sol/SafeL2.json"),
  SafeProxyFactory: load("proxies/SafeProxyFactory.sol/SafeProxyFactory.json"),
  CompatibilityFallbackHandler: load("handler/CompatibilityFallbackHandler.sol/CompatibilityFallbackHandler.json"),
  MultiSend: load("libraries/MultiSend.sol/MultiSend.json"),
  MultiSendCallOnly: load("libraries/MultiSendCallOnly.sol/MultiSendCallOnly.json"),
  SignMessageLib: load("libraries/SignMessageLib.sol/SignMessageLib.json"),
  CreateCall: load("libraries/CreateCall.sol/CreateCall.json"),
  SimulateTxAccessor: load("accessors/SimulateTxAccessor.sol/SimulateTxAccessor.json"),
};
