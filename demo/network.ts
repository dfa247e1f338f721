/**
 * Where the scenario runs. Local (default): an embedded node (Hardhat's, or anvil with `--node anvil`), a fresh
 * Ignition deployment, Hardhat's test keys for the deployment's roles but fresh verifier keys every run (a verifier's
 * sample is keyed by its private key: public keys would let anyone compute it), and the clock advanced instead of
 * waited. External (`--rpc URL
 * --deployment FILE --keys DIR`, e.g. Base Sepolia): an existing deployment, your own key files, real funding and
 * real waiting.
 */
import path from "node:path";
import { Wallet, type JsonRpcProvider } from "ethers";
import { rpcChainId, type Protocol } from "../sdk/node/contracts.ts";
import { formatUsdc } from "../sdk/words/format.ts";
import { loadKey, writeKey } from "../sdk/run/keys.ts";
import { clockAdvancedNote } from "../sdk/run/recording.ts";
import { sleep } from "../sdk/run/retry.ts";
import { mined } from "../sdk/node/txManager.ts";
import { deployLocal, freePort, startAnvil, startChain, TEST_KEYS, type ChainAt, type SafeOwners } from "./chain.ts";
import type { ProcessGroup } from "./processes.ts";
import { Rehearsal } from "./rehearsal.ts";
import { knownStepBound } from "../keepers/coordinator/stepTime.ts";

export type ChainNode = "hardhat" | "anvil";

/** The roles whose key files the scenario needs (providers create their own). */
export const ROLES = ["owner", "coordinator", "verifier1", "verifier2", "verifier3", "client"] as const;
export type Role = (typeof ROLES)[number];

export interface ScenarioNetwork {
  badge: string;
  rpc: string;
  deploymentFile: string;
  keyFiles: Record<Role, string>;
  /** The arbiter's key file, where the run has the key (a local chain: the deployment's arbiter, Hardhat's #2). */
  arbiterKeyFile?: string;
  /** Whether the run started the chain (and its deployment is its own to remove). */
  local: boolean;
  /** Makes sure `address` can pay for gas (a wait for funding ends when `signal` aborts: Ctrl-C). */
  fundGas(provider: JsonRpcProvider, address: string, note: (l: string) => void, signal?: AbortSignal): Promise<void>;
  /** Makes sure the client holds `amount` test USDC. */
  fundClient(protocol: Protocol, client: Wallet, amount: bigint): Promise<void>;
  approveTemplate(protocol: Protocol, provider: JsonRpcProvider, templateId: string): Promise<void>;
  /** Lets `seconds` of chain time pass. */
  passTime(provider: JsonRpcProvider, seconds: number, note: (l: string) => void): Promise<void>;
  canWaitDays: boolean;
  /** The URL one part (keepers, verifier1, alice, start, dashboard …) reaches the chain by (default `rpc`). */
  rpcFor?: (part: string) => string;
  /** `--network rehearsal`: the injector and its counters (demo/rehearsal.ts). */
  rehearsal?: Rehearsal;
  /** Stops what the network itself started besides the chain (the rehearsal's proxies). */
  close?: () => Promise<void>;
}

export interface LocalOptions {
  runDir: string;
  deploymentId: string;
  node?: ChainNode;
  port?: number;
  /** The chain's host with --hosts. */
  at?: ChainAt;
  /** The escrow's lease (seconds) instead of ignition/parameters/local.json's. */
  leaseSeconds?: number;
}

/** Chains the badge can name; any other is named by its id. */
const KNOWN_CHAINS: Record<string, string> = {
  "1": "Ethereum mainnet",
  "10": "OP mainnet",
  "8453": "Base",
  "84532": "Base Sepolia",
  "11155111": "Sepolia",
  "11155420": "OP Sepolia",
  "31337": "a local development chain",
};

export function chainName(chainId: bigint): string {
  return `chain ${chainId}${KNOWN_CHAINS[chainId.toString()] ? ` (${KNOWN_CHAINS[chainId.toString()]})` : ""}`;
}

export async function localNetwork(
  group: ProcessGroup,
  o: LocalOptions,
  note: (l: string) => void,
): Promise<ScenarioNetwork> {
  const port = o.port ?? (o.at ? 8545 : await freePort(8545));
  if (o.port !== undefined && (await freePort(o.port)) !== o.port) {
    throw new Error(`--port ${o.port} is in use (another node?): pick another or leave --port out for a free one`);
  }
  const node = o.node ?? "hardhat";
  const where = `${o.at?.address ?? "127.0.0.1"}:${port}`;
  note(`starting the local chain (${node === "anvil" ? "anvil" : "Hardhat node"}) on ${where} …`);
  const rpc =
    node === "anvil" ? await startAnvil(group, port, { at: o.at }) : await startChain(group, port, undefined, o.at);
  note("deploying test USDC, registry, verifier Safe (2 of 3) and escrow through Ignition …");
  const { keyFiles, arbiterKeyFile } = writeRunKeys(o.runDir);
  const deploymentFile = await deployLocal(rpc, o.deploymentId, safeOwnersOf(o.runDir, keyFiles), o.leaseSeconds);
  const rpcPrefix = node === "anvil" ? "anvil" : "hardhat";
  return {
    badge: `Local chain (${node === "anvil" ? "anvil" : "Hardhat node"})`,
    rpc,
    deploymentFile,
    keyFiles,
    arbiterKeyFile,
    local: true,
    canWaitDays: true,
    fundGas: async (provider, address) =>
      void (await provider.send(`${rpcPrefix}_setBalance`, [address, "0x56BC75E2D63100000"])),
    // TestUSDC's faucet is open to anyone on a local chain.
    fundClient: async (protocol, client, amount) =>
      void (await mined(protocol.usdc.connect(client).mint(client.address, amount))),
    approveTemplate: (protocol, provider, templateId) => approveWithStepBound(protocol, provider, templateId),
    passTime: async (provider, seconds, note) => {
      await provider.send("evm_increaseTime", [seconds]);
      await provider.send("evm_mine", []);
      note(clockAdvancedNote(seconds));
    },
  };
}

/**
 * The owner approves a template and sets its step bound (the on-chain measure of a stalled hold, which prices a
 * newcomer's: keepers/coordinator/stepTime.ts templateStepBoundMs). A template this code does not know keeps the
 * contract's default bound.
 */
async function approveWithStepBound(protocol: Protocol, provider: JsonRpcProvider, templateId: string): Promise<void> {
  const escrow = protocol.escrow.connect(new Wallet(TEST_KEYS.owner, provider));
  await (await escrow.setTemplateApproval(templateId, true)).wait();
  const bound = knownStepBound(templateId);
  if (bound !== undefined) await (await escrow.setTemplateStepBound(templateId, bound)).wait();
}

const VERIFIER_ROLES = ["verifier1", "verifier2", "verifier3"] as const;
type VerifierRole = (typeof VERIFIER_ROLES)[number];

/** Three new random verifier keys: one run's Safe owners. */
export function freshVerifierKeys(): Record<VerifierRole, string> {
  return Object.fromEntries(VERIFIER_ROLES.map((r) => [r, Wallet.createRandom().privateKey])) as Record<
    VerifierRole,
    string
  >;
}

/**
 * A local chain's key files under `<runDir>/keys` (each 0600): the verifiers' from `verifierKeys` (fresh by
 * default), the other roles' from Hardhat's test accounts, and the arbiter's (the deployment's, Hardhat's #2), so
 * that `gpuchain arbiter resolve … --key` works on a kept run.
 */
export function writeRunKeys(
  runDir: string,
  verifierKeys: Record<VerifierRole, string> = freshVerifierKeys(),
): { keyFiles: Record<Role, string>; arbiterKeyFile: string } {
  const file = (name: string) => path.join(runDir, "keys", `${name}.key`);
  const keys: Record<Role, string> = { ...TEST_KEYS, ...verifierKeys };
  const keyFiles = {} as Record<Role, string>;
  for (const role of ROLES) {
    keyFiles[role] = file(role);
    writeKey(keyFiles[role], keys[role]);
  }
  const arbiterKeyFile = file("arbiter");
  writeKey(arbiterKeyFile, TEST_KEYS.arbiter);
  return { keyFiles, arbiterKeyFile };
}

/** The run's verifiers as the Safe's owners, with the Ignition parameters naming them beside the run's keys. */
export function safeOwnersOf(runDir: string, keyFiles: Record<Role, string>): SafeOwners {
  return {
    verifiers: VERIFIER_ROLES.map((r) => loadKey(keyFiles[r]).address),
    parametersFile: path.join(runDir, "ignition-parameters.json"),
  };
}

/**
 * `--network rehearsal`: anvil with 2-s blocks, every part behind a fault proxy of its own, reorgs and a
 * gas spike injected at chosen moments (demo/rehearsal.ts). The local chain's keys (fresh verifiers) and test faucet; the clock
 * advanced straight on the node.
 */
export async function rehearsalNetwork(
  group: ProcessGroup,
  o: LocalOptions,
  note: (l: string) => void,
): Promise<ScenarioNetwork> {
  const { keyFiles, arbiterKeyFile } = writeRunKeys(o.runDir);
  const owners = safeOwnersOf(o.runDir, keyFiles);
  const { rehearsal, deploymentFile } = await Rehearsal.start(group, { ...o, owners }, note);
  return {
    badge: "Rehearsal: anvil, 2-s blocks, RPC faults, reorganisations, a gas spike",
    rpc: rehearsal.rpcFor("start"),
    rpcFor: (part) => rehearsal.rpcFor(part),
    rehearsal,
    close: () => rehearsal.close(),
    deploymentFile,
    keyFiles,
    arbiterKeyFile,
    local: true,
    canWaitDays: true,
    fundGas: (_provider, address) => rehearsal.fundGas(address),
    fundClient: async (protocol, client, amount) =>
      void (await mined(protocol.usdc.connect(client).mint(client.address, amount))),
    approveTemplate: (protocol, provider, templateId) => approveWithStepBound(protocol, provider, templateId),
    passTime: async (_provider, seconds, note) => {
      await rehearsal.passTime(seconds);
      note(`advanced the chain's clock by ${seconds} s`);
    },
  };
}

/** An existing deployment on any network. Keys: `<keysDir>/<role>.key`, each 0600. */
export async function externalNetwork(rpc: string, deploymentFile: string, keysDir: string): Promise<ScenarioNetwork> {
  const keyFiles = {} as Record<Role, string>;
  for (const role of ROLES) {
    keyFiles[role] = path.join(keysDir, `${role}.key`);
    loadKey(keyFiles[role]); // fail now, with the file's name, rather than in a child process later
  }
  const chainId = await rpcChainId(rpc);
  return {
    badge: `Existing deployment on ${chainName(chainId)}`,
    rpc,
    deploymentFile,
    keyFiles,
    local: false,
    canWaitDays: false,
    fundGas: (provider, address, note, signal) => waitForGas(provider, address, note, signal),
    fundClient: async (protocol, client, amount) => {
      const balance = await protocol.usdc.balanceOf(client.address);
      if (balance < amount) {
        throw new Error(
          `the client ${client.address} holds ${formatUsdc(balance)}; the job needs ${formatUsdc(amount)} ` +
            '(test USDC: see README "Deploying")',
        );
      }
    },
    approveTemplate: async (protocol, _provider, templateId) => {
      if (!(await protocol.escrow.isApprovedTemplate(templateId))) {
        throw new Error(
          `template ${templateId} is not approved on this escrow: ` +
            "its owner runs `npx gpuchain job approve-template NAME`",
        );
      }
    },
    passTime: async (_provider, seconds, note) => {
      note(`waiting ${seconds} s of real time for the dispute window to pass …`);
      await sleep(seconds * 1000);
    },
  };
}

/**
 * Asks once, then checks the balance every 2 s until the address can pay for gas: not only at new blocks, since a
 * development node's faucet (hardhat_setBalance) changes a balance without mining one.
 */
async function waitForGas(
  provider: JsonRpcProvider,
  address: string,
  note: (l: string) => void,
  signal?: AbortSignal,
): Promise<void> {
  if ((await provider.getBalance(address)) > 0n) return;
  const rpc = provider._getConnection().url;
  note(
    `fund ${address} with test ETH for gas (a development node: npx gpuchain faucet ${address} --rpc ${rpc}); ` +
      "checking its balance every 2 s …",
  );
  for (;;) {
    await sleep(2_000, signal);
    if (signal?.aborted) throw new Error("stopped by the user");
    if ((await provider.getBalance(address, "latest")) > 0n) {
      note(`${address} funded`);
      return;
    }
  }
}
