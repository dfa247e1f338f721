import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const root = "@safe-global/safe-contracts/build/artifacts/contracts";

/** The prebuilt Safe v1.4.1 artifacts, loaded from the audited npm package rather than recompiled. */
export const safeArtifacts = {
  SafeL2: require(`${root}/SafeL2.sol/SafeL2.json`),
  SafeProxyFactory: require(`${root}/proxies/SafeProxyFactory.sol/SafeProxyFactory.json`),
  CompatibilityFallbackHandler: require(
    `${root}/handler/CompatibilityFallbackHandler.sol/CompatibilityFallbackHandler.json`,
  ),
  MultiSend: require(`${root}/libraries/MultiSend.sol/MultiSend.json`),
  MultiSendCallOnly: require(`${root}/libraries/MultiSendCallOnly.sol/MultiSendCallOnly.json`),
  SignMessageLib: require(`${root}/libraries/SignMessageLib.sol/SignMessageLib.json`),
  CreateCall: require(`${root}/libraries/CreateCall.sol/CreateCall.json`),
  SimulateTxAccessor: require(`${root}/accessors/SimulateTxAccessor.sol/SimulateTxAccessor.json`),
};
