import { buildModule } from "@nomicfoundation/hardhat-ignition/modules";
import { safeArtifacts as a } from "./safeArtifacts.ts";

/**
 * The Safe v1.4.1 singletons. Deployed by us (not assumed at canonical addresses) so that the local chain and
 * Base Sepolia run the same code from the same artifacts; protocol-kit is told their addresses.
 */
export default buildModule("SafeSingletons", (m) => {
  const safeSingleton = m.contract("SafeL2", a.SafeL2);
  const proxyFactory = m.contract("SafeProxyFactory", a.SafeProxyFactory);
  const fallbackHandler = m.contract("CompatibilityFallbackHandler", a.CompatibilityFallbackHandler);
  const multiSend = m.contract("MultiSend", a.MultiSend);
  const multiSendCallOnly = m.contract("MultiSendCallOnly", a.MultiSendCallOnly);
  const signMessageLib = m.contract("SignMessageLib", a.SignMessageLib);
  const createCall = m.contract("CreateCall", a.CreateCall);
  const simulateTxAccessor = m.contract("SimulateTxAccessor", a.SimulateTxAccessor);
  return {
    safeSingleton,
    proxyFactory,
    fallbackHandler,
    multiSend,
    multiSendCallOnly,
    signMessageLib,
    createCall,
    simulateTxAccessor,
  };
});
