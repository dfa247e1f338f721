/** The embedded local chain (Hardhat's simulated network as a JSON-RPC node) and the Ignition deployment on it. */
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import path from "node:path";
import { JsonRpcProvider, parseEther, Wallet } from "ethers";
import { sleep } from "../sdk/run/retry.ts";
import { runToEnd, type ProcessGroup } from "./processes.ts";

const require = createRequire(import.meta.url);
export const HARDHAT_CLI = path.join(path.dirname(require.resolve("hardhat/package.json")), "dist/src/cli.js");

/** Hardhat's well-known test accounts (mnemonic "test … junk"): local chains only. */
export const TEST_KEYS = {
  owner: "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
  coordinator: "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
  arbiter: "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
  verifier1: "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6",
  verifier2: "0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a",
  verifier3: "0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba",
  feeRecipient: "0x92db14e403b83dfe3df233f83dfa3a0d7096f21ca9b0d6d6b8d88b2b4ec1564e",
  client: "0x4bbbf85ce3377467afe5d46f804f221813b2bb87f24d81f60f1fcdbf7cbf4356",
  keeper: "0xdbda1821b80551c9d65939329250298aa3472ba22feea921c0cf5d620ea67b97",
} as const;

export async function freePort(preferred: number): Promise<number> {
  const tryPort = (port: number) =>
    new Promise<number>((resolve, reject) => {
      const server = createServer();
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => {
        const { port: got } = server.address() as { port: number };
        server.close(() => resolve(got));
      });
    });
  return tryPort(preferred).catch(() => tryPort(0));
}

/** Where a node listens: loopback, or (with --hosts) its own host's address, run through that host's wrapper. */
export interface ChainAt {
  address: string;
  wrapper: string[];
}

const LOOPBACK: ChainAt = { address: "127.0.0.1", wrapper: [] };

/** Starts `hardhat node` on `port` and waits until it answers (on `at`'s host and address with --hosts). */
export async function startChain(
  group: ProcessGroup,
  port: number,
  timeoutMs = 90_000,
  at = LOOPBACK,
): Promise<string> {
  group.start("chain", [HARDHAT_CLI, "node", "--port", String(port), "--hostname", at.address], {}, at.wrapper);
  return waitUntilAnswering(group, "chain", `http://${at.address}:${port}`, timeoutMs);
}

/**
 * Foundry's anvil (npm `@foundry-rs/anvil`): a second, independent node implementation. Its platform binary is
 * run directly, so that stopping it stops the node (the npm wrapper would leave it behind on SIGKILL).
 */
export function anvilBinary(): string {
  const arch = process.arch === "x64" ? "amd64" : process.arch;
  try {
    return path.join(
      path.dirname(require.resolve(`@foundry-rs/anvil-${process.platform}-${arch}/package.json`)),
      "bin",
      "anvil",
    );
  } catch {
    throw new Error(`no anvil binary for ${process.platform}/${process.arch} (npm @foundry-rs/anvil)`);
  }
}

export interface AnvilOptions {
  chainId?: number;
  /** Seconds between blocks (mining on a timer); automine when absent. */
  blockTime?: number;
  /** Keep only the state of the last N blocks, as a pruned (non-archive) full node does. */
  pruneHistory?: number;
  /**
   * A genesis.json (`anvil --init`): a `number` in it starts the chain at that height, as if that many blocks came
   * before (their logs are empty, their headers absent): a long history without mining it.
   */
  init?: string;
  at?: ChainAt;
}

/** Starts anvil on `port` under `name` with Hardhat's test accounts and waits until it answers. */
export async function startAnvil(
  group: ProcessGroup,
  port: number,
  o: AnvilOptions = {},
  name = "chain",
): Promise<string> {
  const at = o.at ?? LOOPBACK;
  const args = ["--port", String(port), "--host", at.address, "--silent"];
  if (o.chainId !== undefined) args.push("--chain-id", String(o.chainId));
  if (o.blockTime !== undefined) args.push("--block-time", String(o.blockTime));
  if (o.pruneHistory !== undefined) args.push("--prune-history", String(o.pruneHistory));
  if (o.init !== undefined) args.push("--init", o.init);
  group.start(name, args, {}, at.wrapper, anvilBinary());
  return waitUntilAnswering(group, name, `http://${at.address}:${port}`, 30_000);
}

async function waitUntilAnswering(group: ProcessGroup, name: string, url: string, timeoutMs: number): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!group.has(name)) throw new Error(`the local chain (${name}) exited during start-up (see its output above)`);
    if (await answers(url)) return url;
    await sleep(200);
  }
  throw new Error(`the local chain did not answer on ${url} within ${timeoutMs / 1000} s`);
}

async function answers(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
    });
    return res.ok;
  } catch {
    return false;
  }
}

/** The Safe's owners of one run, and where the Ignition parameters naming them are written. */
export interface SafeOwners {
  verifiers: readonly string[];
  parametersFile: string;
}

const LOCAL_PARAMETERS = "ignition/parameters/local.json";

/** Pure: the local parameters with the three verifier addresses as the Safe's owners (the module's defaults otherwise). */
export function withSafeOwners(parameters: Record<string, Record<string, unknown>>, verifiers: readonly string[]) {
  const named = Object.fromEntries(verifiers.map((a, i) => [`verifier${i + 1}`, a]));
  return { ...parameters, VerifierSafe: { ...parameters.VerifierSafe, ...named } };
}

/**
 * Deploys GPUChainLocal through Ignition (the same module the tests deploy) and returns the addresses file. Without
 * `owners` the Safe's owners are Hardhat's accounts 3–5 (tests that sign with TEST_KEYS); a run passes its own.
 */
export async function deployLocal(
  rpcUrl: string,
  deploymentId: string,
  owners?: SafeOwners,
  leaseSeconds?: number,
): Promise<string> {
  let parameters = LOCAL_PARAMETERS;
  if (owners) {
    let local = JSON.parse(readFileSync(LOCAL_PARAMETERS, "utf8")) as Record<string, Record<string, unknown>>;
    if (leaseSeconds !== undefined) {
      local = { ...local, GPUChainLocal: { ...local.GPUChainLocal, leaseDurationSeconds: leaseSeconds } };
    }
    writeFileSync(owners.parametersFile, JSON.stringify(withSafeOwners(local, owners.verifiers), null, 2) + "\n");
    parameters = owners.parametersFile;
  }
  // A fresh chain every run: an old journal under this id describes contracts that no longer exist.
  rmSync(path.join("ignition", "deployments", deploymentId), { recursive: true, force: true });
  const { code, output, ended } = await runToEnd(
    [
      HARDHAT_CLI,
      "ignition",
      "deploy",
      "ignition/modules/GPUChainLocal.ts",
      "--network",
      "localhost",
      "--parameters",
      parameters,
      "--deployment-id",
      deploymentId,
      "--reset",
    ],
    { GPUCHAIN_RPC_URL: rpcUrl },
  );
  if (code !== 0)
    throw new Error(`Ignition deployment failed (${ended})${output.trim() ? `:\n${output}` : ", with no output"}`);
  if (owners) await fundFromDeployer(rpcUrl, owners.verifiers);
  return path.join("ignition", "deployments", deploymentId, "deployed_addresses.json");
}

/** Gas for a run's own keys, sent by the deployer (Hardhat's #0): 100 test ETH each, one transfer after another. */
async function fundFromDeployer(rpcUrl: string, addresses: readonly string[]): Promise<void> {
  const provider = new JsonRpcProvider(rpcUrl, undefined, { staticNetwork: true, cacheTimeout: -1 });
  try {
    const deployer = new Wallet(TEST_KEYS.owner, provider);
    let nonce = await provider.getTransactionCount(deployer.address, "pending");
    for (const to of addresses) {
      await (await deployer.sendTransaction({ to, value: parseEther("100"), nonce: nonce++ })).wait();
    }
  } finally {
    provider.destroy();
  }
}
