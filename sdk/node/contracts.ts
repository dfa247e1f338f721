/**
 * Typed ethers handles on the deployed protocol. ABIs come from Hardhat's build artifacts at run time (the
 * generated TypeChain types are used for types only, so plain Node can run this file).
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import {
  Contract,
  FetchRequest,
  Interface,
  JsonRpcProvider,
  Network,
  type ContractRunner,
  type Provider,
} from "ethers";
import { JsonRpcClient } from "./jsonRpc.ts";
import { backoffWithJitter, parseRetryAfter, rpcSettings, splitRpcUrls, statusFault } from "./rpc.ts";
import { sleep } from "../run/retry.ts";
import type { JobEscrow, ProviderRegistry, TestUSDC } from "../../types/ethers-contracts/index.ts";
import { DeploymentError, type Deployment } from "./deployment.ts";
import { UsageError } from "../run/args.ts";

const ARTIFACTS = new URL("../../artifacts/contracts/", import.meta.url);

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

let errorsCached: Interface | undefined;

/**
 * Every custom error a command's transaction may revert with, from any of the three contracts: the escrow's own,
 * the registry's (reached through the escrow) and the token's (OpenZeppelin's ERC20 errors on a transfer or
 * permit). One interface, so a revert from any of them decodes to its name and values.
 */
export function protocolErrors(): Interface {
  if (errorsCached) return errorsCached;
  const bySelector = new Map<string, string>();
  for (const iface of Object.values(protocolInterfaces())) {
    iface.forEachError((e) => bySelector.set(e.selector, e.format("full")));
  }
  return (errorsCached = new Interface([...bySelector.values()]));
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
 * identical calls for 250 ms by default, which hands two quick transactions from one key the same nonce. Its
 * network is static: the chain id is asked once at start-up, not with every request (ethers' default doubles the
 * request count of every keeper tick).
 */
export function rpcProvider(url: string, pollingMs = 500): JsonRpcProvider {
  const provider = new JsonRpcClient(url, undefined, { polling: true, cacheTimeout: -1, staticNetwork: true });
  provider.pollingInterval = rpcSettings({ pollingMs }).pollingMs;
  return provider;
}

/** The RPC could not be used: down, slow, not JSON-RPC. One line, naming the URL. */
export class RpcError extends Error {}

export const DEFAULT_RPC_TIMEOUT_MS = 10_000;

/** A syntactically usable RPC URL, or several separated by commas (checked before any connection). */
export function checkRpcUrl(spec: string): void {
  const urls = splitRpcUrls(spec);
  if (urls.length === 0) throw new UsageError(`--rpc must be an http(s) URL like http://127.0.0.1:8545, got "${spec}"`);
  for (const url of urls) {
    let parsed: URL | undefined;
    try {
      parsed = new URL(url);
    } catch {
      parsed = undefined;
    }
    if (!parsed || !["http:", "https:"].includes(parsed.protocol)) {
      throw new UsageError(`--rpc must be an http(s) URL like http://127.0.0.1:8545, got "${url}"`);
    }
  }
}

/**
 * The chain id the node at `spec` reports, within `timeoutMs`; every failure an RpcError. With several URLs
 * (`A,B`) each is asked in turn until one answers; those that answer must agree.
 */
export async function rpcChainId(spec: string, timeoutMs = DEFAULT_RPC_TIMEOUT_MS): Promise<bigint> {
  const urls = splitRpcUrls(spec);
  if (urls.length <= 1) return oneChainId(urls[0] ?? spec, timeoutMs);
  let found: { url: string; id: bigint } | undefined;
  let firstError: unknown;
  for (const url of urls) {
    try {
      const id = await oneChainId(url, timeoutMs);
      if (found && found.id !== id) {
        throw new RpcError(`the RPCs disagree: ${found.url} is chain ${found.id}, ${url} is chain ${id}`);
      }
      found ??= { url, id };
    } catch (err) {
      if (!(err instanceof RpcError) || /disagree/.test(err.message)) throw err;
      firstError ??= err;
    }
  }
  if (!found) throw firstError;
  return found.id;
}

/**
 * One URL's chain id. A 429, 5xx, reset, timeout or a body that is not JSON is retried with backoff and jitter
 * (sdk/node/rpc.ts) within `timeoutMs`; a refused connection (nothing listens: a wrong URL, a node not started) and an
 * answer that is not a chain id fail at once.
 */
async function oneChainId(url: string, timeoutMs: number): Promise<bigint> {
  const deadline = performance.now() + timeoutMs;
  const attemptMs = Math.max(1_000, Math.floor(timeoutMs / 2));
  for (let attempt = 1; ; attempt++) {
    const outcome = await chainIdAttempt(url, Math.max(1, Math.min(attemptMs, deadline - performance.now())));
    if (typeof outcome === "bigint") return outcome;
    const delay = Math.max(outcome.retryAfterMs ?? 0, backoffWithJitter(attempt, 100, 2_000, Math.random));
    if (!outcome.retry || performance.now() + delay >= deadline) {
      throw outcome.timedOut
        ? new RpcError(`the RPC at ${url} did not answer within ${timeoutMs / 1000} s`)
        : outcome.error;
    }
    await sleep(delay);
  }
}

type ChainIdFailure = { error: RpcError; retry: boolean; retryAfterMs?: number; timedOut?: boolean };

async function chainIdAttempt(url: string, timeoutMs: number): Promise<bigint | ChainIdFailure> {
  let res: Response;
  try {
    res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
      signal: AbortSignal.timeout(Math.max(1, Math.floor(timeoutMs))),
    });
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    if (e.name === "TimeoutError") {
      return { error: new RpcError(`the RPC at ${url} did not answer in time`), retry: true, timedOut: true };
    }
    const refused = e.cause?.code === "ECONNREFUSED";
    const why = refused ? "connection refused" : (e.cause?.code ?? e.cause?.message ?? e.message);
    return { error: new RpcError(`cannot reach the RPC at ${url} (${why}): is the node running?`), retry: !refused };
  }
  const text = await res.text().catch(() => undefined);
  let body: { result?: unknown } | undefined;
  let json = true;
  try {
    body = text === undefined ? undefined : (JSON.parse(text) as { result?: unknown });
  } catch {
    json = false;
  }
  if (res.ok && typeof body?.result === "string") return BigInt(body.result);
  const error = new RpcError(`${url} did not answer eth_chainId like an Ethereum JSON-RPC node (HTTP ${res.status})`);
  const transient = statusFault(res.status) !== undefined || (res.ok && (!json || text === undefined));
  return { error, retry: transient, retryAfterMs: parseRetryAfter(res.headers.get("retry-after") ?? undefined) };
}

/**
 * Connects to `url` and checks it against the deployment before anything is sent: the node answers, its chain id
 * is the one the deployment was made on, and the escrow, registry and token have code there (a deployment file
 * left over from a restarted chain points at empty addresses and must not be trusted).
 */
export async function connectChecked(
  url: string,
  deployment: Deployment,
  timeoutMs = DEFAULT_RPC_TIMEOUT_MS,
  pollingMs = 500,
): Promise<{ provider: JsonRpcProvider; chainId: bigint }> {
  checkRpcUrl(url);
  const chainId = await rpcChainId(url, timeoutMs);
  const provider = staticProvider(url, chainId, timeoutMs, pollingMs);
  try {
    await checkDeploymentOn(provider, deployment, url, chainId);
  } catch (err) {
    provider.destroy();
    throw err;
  }
  return { provider, chainId };
}

/**
 * The deployment belongs to the chain behind `provider` (chain id `chainId`, reached at `url`): made on that chain id,
 * and its escrow, registry and token have code there. A deployment file left over from a restarted chain points at
 * empty addresses; every call through it would fail later with a puzzle ("could not decode result data").
 */
export async function checkDeploymentOn(
  provider: Provider,
  deployment: Deployment,
  url: string,
  chainId: bigint,
): Promise<void> {
  const file = deployment.file ?? "the deployment file";
  if (deployment.chainId !== undefined && deployment.chainId !== chainId) {
    throw new DeploymentError(
      `${file} was deployed on chain ${deployment.chainId}, but the RPC at ${url} is chain ${chainId}: ` +
        "pass the deployment made on this chain (or the RPC of that chain)",
    );
  }
  const parts = { escrow: deployment.escrow, registry: deployment.registry, token: deployment.usdc };
  for (const [name, address] of Object.entries(parts)) {
    const code = await provider.getCode(address).catch((err: unknown) => {
      throw new RpcError(`the RPC at ${url} failed eth_getCode: ${(err as Error).message.split("\n")[0]}`);
    });
    if (code === "0x") {
      throw new DeploymentError(
        `no contract code at the ${name} address ${address} on chain ${chainId} (${url}): ${file} is stale ` +
          `(was the chain restarted?); ${redeployAdvice(deployment.file, url, chainId)}`,
      );
    }
  }
}

/** Hardhat's `localhost` network URL when GPUCHAIN_RPC_URL is not set (hardhat.config.ts). */
const HARDHAT_LOCALHOST_URL = "http://127.0.0.1:8545";

/**
 * What to run, from the project folder, to deploy the local protocol again on a restarted chain at `url`: README's
 * deploy command with `--reset` (Ignition otherwise reuses the old journal, or on a node without `hardhat_metadata`
 * takes every contract as already deployed). When `file` is an Ignition deployment folder of this project, the
 * command writes over it (its `--deployment-id` when not the default `chain-ID`); else it says which file to pass.
 */
export function redeployAdvice(file: string | undefined, url: string, chainId: bigint): string {
  const deployments = path.resolve("ignition", "deployments");
  const resolved = file === undefined ? undefined : path.resolve(file);
  const id =
    resolved !== undefined &&
    path.basename(resolved) === "deployed_addresses.json" &&
    path.dirname(path.dirname(resolved)) === deployments
      ? path.basename(path.dirname(resolved))
      : undefined;
  const defaultId = `chain-${chainId}`;
  const command = [
    url === HARDHAT_LOCALHOST_URL ? [] : [`GPUCHAIN_RPC_URL=${url}`],
    "npx hardhat ignition deploy ignition/modules/GPUChainLocal.ts --network localhost",
    "--parameters ignition/parameters/local.json",
    id === undefined || id === defaultId ? [] : ["--deployment-id", id],
    "--reset",
  ].flat();
  const advice = `deploy again with \`${command.join(" ")}\``;
  return id === undefined
    ? `${advice}, then pass --deployment ignition/deployments/${defaultId}/deployed_addresses.json`
    : advice;
}

/**
 * A provider pinned to a known chain id (no network detection loop). Each call, its retries included (sdk/node/rpc.ts),
 * is bounded by `timeoutMs`; past it the call fails (a failed read is unknown, never a default value).
 */
export function staticProvider(url: string, chainId: bigint, timeoutMs: number, pollingMs = 500): JsonRpcProvider {
  const request = new FetchRequest(url);
  request.timeout = timeoutMs;
  const network = Network.from(chainId);
  const provider = new JsonRpcClient(
    request,
    network,
    { staticNetwork: network, polling: true, cacheTimeout: -1 },
    { budgetMs: timeoutMs },
  );
  provider.pollingInterval = rpcSettings({ pollingMs }).pollingMs;
  return provider;
}

/** Job status names by enum value: the job model lives in sdk/rules/job.ts (kept here for the commands that import it). */
export { JOB_STATUS, type JobStatusName } from "../rules/job.ts";
