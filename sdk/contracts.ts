/**
 * Typed ethers handles on the deployed protocol. ABIs come from Hardhat's build artifacts at run time (the
 * generated TypeChain types are used for types only, so plain Node can run this file).
 */
import { readFileSync } from "node:fs";
import { Contract, Interface, JsonRpcProvider, type ContractRunner } from "ethers";
import type { JobEscrow, ProviderRegistry, TestUSDC } from "../types/ethers-contracts/index.ts";
import type { Deployment } from "./deployment.ts";

const ARTIFACTS = new URL("../artifacts/contracts/", import.meta.url);

function abiOf(file: string, name: string): Interface {
  const url = new URL(`${file}/${name}.json`, ARTIFACTS);
  try {
    return new Interface(JSON.parse(readFileSync(url, "utf8")).abi);
  } catch {
    throw new Error(`missing build artifact ${url.pathname}: run \`npx hardhat build\` first`);
  }
}

let cached: { escrow: Interface; registry: Interface; usdc: Interface } | undefined;

/** The contracts' ABIs (cached). */
export function protocolInterfaces() {
  cached ??= {
    escrow: abiOf("JobEscrow.sol", "JobEscrow"),
    registry: abiOf("ProviderRegistry.sol", "ProviderRegistry"),
    usdc: abiOf("test/TestUSDC.sol", "TestUSDC"),
  };
  return cached;
}

export interface Protocol {
  escrow: JobEscrow;
  registry: ProviderRegistry;
  usdc: TestUSDC;
}

export function connectProtocol(deployment: Deployment, runner: ContractRunner): Protocol {
  const abi = protocolInterfaces();
  return {
    escrow: new Contract(deployment.escrow, abi.escrow, runner) as unknown as JobEscrow,
    registry: new Contract(deployment.registry, abi.registry, runner) as unknown as ProviderRegistry,
    usdc: new Contract(deployment.usdc, abi.usdc, runner) as unknown as TestUSDC,
  };
}

/**
 * A JSON-RPC provider that polls quickly (local chains mine on demand). Its request cache is off: ethers caches
 * identical calls for 250 ms by default, which hands two quick transactions from one key the same nonce.
 */
export function rpcProvider(url: string, pollingMs = 500): JsonRpcProvider {
  const provider = new JsonRpcProvider(url, undefined, { polling: true, cacheTimeout: -1 });
  provider.pollingInterval = pollingMs;
  return provider;
}

/** Job status names by enum value: the job model lives in sdk/job.ts (kept here for the commands that import it). */
export { JOB_STATUS, type JobStatusName } from "./job.ts";
