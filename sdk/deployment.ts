/**
 * Where the protocol lives: read from Ignition's deployed_addresses.json, never from a hand-kept address map.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { MULTICALL3_ADDRESS } from "./multicall3Code.ts";

export interface Deployment {
  escrow: string;
  registry: string;
  usdc: string;
  verifierSafe: string;
  /** Multicall3: Ignition's local deployment, else its canonical address (every public chain has it there). */
  multicall3: string;
  /** Safe singletons, for protocol-kit's `contractNetworks`. */
  safe: {
    safeSingletonAddress: string;
    safeProxyFactoryAddress: string;
    fallbackHandlerAddress: string;
    multiSendAddress: string;
    multiSendCallOnlyAddress: string;
    signMessageLibAddress: string;
    createCallAddress: string;
    simulateTxAccessorAddress: string;
  };
}

export const LOCAL_CHAIN_ID = 31337n;

export function defaultDeploymentPath(chainId: bigint = LOCAL_CHAIN_ID): string {
  return path.join("ignition", "deployments", `chain-${chainId}`, "deployed_addresses.json");
}

export class DeploymentError extends Error {}

/** Maps Ignition's `Module#Future` keys to the parts GPUChain needs. Throws a DeploymentError naming what is missing. */
export function parseDeployment(addresses: Record<string, string>): Deployment {
  const pick = (suffix: string): string => {
    const key = Object.keys(addresses).find((k) => k.endsWith(`#${suffix}`));
    if (!key) throw new DeploymentError(`deployment has no ${suffix} (keys: ${Object.keys(addresses).join(", ")})`);
    return addresses[key];
  };
  const usdcKey = Object.keys(addresses).find((k) => k.endsWith("#TestUSDC") || k.endsWith("#IERC20"));
  if (!usdcKey) throw new DeploymentError("deployment has no token (TestUSDC or IERC20)");
  return {
    escrow: pick("JobEscrow"),
    registry: pick("ProviderRegistry"),
    usdc: addresses[usdcKey],
    verifierSafe: pick("VerifierSafeProxy"),
    multicall3: addresses[Object.keys(addresses).find((k) => k.endsWith("#Multicall3")) ?? ""] ?? MULTICALL3_ADDRESS,
    safe: {
      safeSingletonAddress: pick("SafeL2"),
      safeProxyFactoryAddress: pick("SafeProxyFactory"),
      fallbackHandlerAddress: pick("CompatibilityFallbackHandler"),
      multiSendAddress: pick("MultiSend"),
      multiSendCallOnlyAddress: pick("MultiSendCallOnly"),
      signMessageLibAddress: pick("SignMessageLib"),
      createCallAddress: pick("CreateCall"),
      simulateTxAccessorAddress: pick("SimulateTxAccessor"),
    },
  };
}

export function loadDeployment(file: string): Deployment {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    throw new DeploymentError(
      `no deployment at ${file}: deploy first (npx hardhat ignition deploy ...) or pass --deployment FILE`,
    );
  }
  return parseDeployment(JSON.parse(text));
}
