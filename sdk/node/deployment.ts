/**
 * Where the protocol lives: read from Ignition's deployed_addresses.json, never from a hand-kept address map.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { MULTICALL3_ADDRESS } from "./multicall3Code.ts";

export interface Deployment {
  /** The file it was read from (for messages). */
  file?: string;
  /** The chain it was deployed on, when Ignition's journal beside the file (or the folder name) tells. */
  chainId?: bigint;
  /** The block of the deployment's first transaction, when Ignition's journal beside the file tells. */
  firstBlock?: number;
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

/** Maps Ignition's `Module#Future` keys to the parts GPUChain needs; a DeploymentError names what is missing. */
export function parseDeployment(addresses: Record<string, string>): Deployment {
  const pick = (suffix: string): string => {
    const key = Object.keys(addresses).find((k) => k.endsWith(`#${suffix}`));
    if (!key) throw new DeploymentError(`deployment has no ${suffix} (no key ending in #${suffix})`);
    return addressAt(addresses, key);
  };
  const usdcKey = Object.keys(addresses).find((k) => k.endsWith("#TestUSDC") || k.endsWith("#IERC20"));
  if (!usdcKey) throw new DeploymentError("deployment has no token (TestUSDC or IERC20)");
  return {
    escrow: pick("JobEscrow"),
    registry: pick("ProviderRegistry"),
    usdc: addressAt(addresses, usdcKey),
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

/** Reads and checks a deployment file; every problem is a DeploymentError naming the file and what to do. */
function addressAt(addresses: Record<string, string>, key: string): string {
  const value = addresses[key];
  if (typeof value !== "string" || !/^0x[0-9a-fA-F]{40}$/.test(value)) {
    throw new DeploymentError(`deployment entry ${key} is not an address: ${JSON.stringify(value)}`);
  }
  return value;
}

export function loadDeployment(file: string): Deployment {
  if (!existsSync(file)) {
    throw new DeploymentError(
      `no deployment file at ${file}: deploy first (npx hardhat ignition deploy …) or pass --deployment FILE`,
    );
  }
  if (statSync(file).isDirectory()) {
    throw new DeploymentError(`--deployment ${file} is a folder: give its deployed_addresses.json`);
  }
  let addresses: unknown;
  try {
    addresses = JSON.parse(readFileSync(file, "utf8"));
  } catch (err) {
    throw new DeploymentError(`deployment file ${file} is not JSON (${(err as Error).message.split("\n")[0]})`);
  }
  if (!addresses || typeof addresses !== "object" || Array.isArray(addresses)) {
    throw new DeploymentError(
      `deployment file ${file} is not Ignition's deployed_addresses.json (an object of addresses)`,
    );
  }
  try {
    const firstBlock = deploymentFirstBlock(file);
    return {
      ...parseDeployment(addresses as Record<string, string>),
      file,
      chainId: deploymentChainId(file),
      ...(firstBlock === undefined ? {} : { firstBlock }),
    };
  } catch (err) {
    if (err instanceof DeploymentError) throw new DeploymentError(`${file}: ${err.message}`);
    throw err;
  }
}

/** Where event scans start: the block given (`--from-block`), else the deployment's first block, else 0. */
export const eventsFrom = (given: number | undefined, d: Pick<Deployment, "firstBlock">): number =>
  given ?? d.firstBlock ?? 0;

/**
 * The lowest block of any transaction receipt Ignition recorded in the journal beside the file (its
 * TRANSACTION_CONFIRM messages): no event of the deployment's contracts is older. Unknown without a journal.
 */
export function deploymentFirstBlock(file: string): number | undefined {
  const journal = path.join(path.dirname(file), "journal.jsonl");
  if (!existsSync(journal)) return undefined;
  let first: number | undefined;
  for (const line of readFileSync(journal, "utf8").split("\n")) {
    if (!line.includes('"TRANSACTION_CONFIRM"')) continue;
    const block = receiptBlock(line);
    if (block !== undefined && (first === undefined || block < first)) first = block;
  }
  return first;
}

function receiptBlock(line: string): number | undefined {
  try {
    const n = (JSON.parse(line) as { receipt?: { blockNumber?: unknown } }).receipt?.blockNumber;
    return typeof n === "number" && Number.isSafeInteger(n) && n >= 0 ? n : undefined;
  } catch {
    return undefined; // a line cut short by an interrupted deployment
  }
}

/** The chain id Ignition recorded in the journal beside the file, else the `chain-N` folder name, else unknown. */
export function deploymentChainId(file: string): bigint | undefined {
  const journal = path.join(path.dirname(file), "journal.jsonl");
  if (existsSync(journal)) {
    const first = readFileSync(journal, "utf8")
      .split("\n")
      .find((l) => l.includes('"chainId"'));
    const m = first ? /"chainId"\s*:\s*(\d+)/.exec(first) : null;
    if (m) return BigInt(m[1]);
  }
  const folder = /(?:^|[\\/])chain-(\d+)[\\/]/.exec(file);
  return folder ? BigInt(folder[1]) : undefined;
}
