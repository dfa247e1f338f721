import { buildModule } from "@nomicfoundation/hardhat-ignition/modules";
import { safeArtifacts } from "./safeArtifacts.ts";
import SafeSingletonsModule from "./SafeSingletons.ts";

const ZERO = "0x0000000000000000000000000000000000000000";

/**
 * The verifier multisig: a real Safe proxy with the three verifier keys as owners and a threshold of 2.
 * Parameters: `verifier1..3` (addresses), `threshold` (default 2), `saltNonce`.
 */
export default buildModule("VerifierSafe", (m) => {
  const singletons = m.useModule(SafeSingletonsModule);
  const { safeSingleton, proxyFactory, fallbackHandler } = singletons;
  // Three named parameters rather than one array: a parameter's default may be an account, not a list of them.
  const verifiers = [1, 2, 3].map((i) => m.getParameter(`verifier${i}`, m.getAccount(2 + i) as never));
  const threshold = m.getParameter("threshold", 2);
  const saltNonce = m.getParameter("saltNonce", 0);

  const initializer = m.encodeFunctionCall(safeSingleton, "setup", [
    verifiers,
    threshold,
    ZERO, // no delegate call on setup
    "0x",
    fallbackHandler, // EIP-1271 isValidSignature(bytes32,bytes) lives in the fallback handler
    ZERO,
    0,
    ZERO,
  ]);
  const createProxy = m.call(proxyFactory, "createProxyWithNonce", [safeSingleton, initializer, saltNonce]);
  const safeAddress = m.readEventArgument(createProxy, "ProxyCreation", "proxy", { emitter: proxyFactory });
  const verifierSafe = m.contractAt("VerifierSafeProxy", safeArtifacts.SafeL2, safeAddress);
  return { verifierSafe, ...singletons };
});
