/**
 * Where the scenario runs. Local (default): an embedded `hardhat node`, a fresh Ignition deployment, Hardhat's
 * test keys, and the clock advanced instead of waited. External (`--rpc URL --deployment FILE --keys DIR`, e.g.
 * Base Sepolia): an existing deployment, your own key files, real funding and real waiting.
 */
import path from "node:path";
import { Wallet, type JsonRpcProvider } from "ethers";
import type { Protocol } from "../sdk/contracts.ts";
import { loadKey, writeKey } from "../sdk/keys.ts";
import { sleep } from "../sdk/retry.ts";
import { deployLocal, freePort, startChain, TEST_KEYS } from "./chain.ts";
import type { ProcessGroup } from "./processes.ts";

/** The roles whose key files the scenario needs (providers create their own). */
export const ROLES = ["owner", "coordinator", "verifier1", "verifier2", "verifier3", "client"] as const;
export type Role = (typeof ROLES)[number];

export interface ScenarioNetwork {
  badge: string;
  rpc: string;
  deploymentFile: string;
  keyFiles: Record<Role, string>;
  /** Makes sure `address` can pay for gas. */
  fundGas(provider: JsonRpcProvider, address: string, note: (l: string) => void): Promise<void>;
  /** Makes sure the client holds `amount` test USDC. */
  fundClient(protocol: Protocol, client: Wallet, amount: bigint): Promise<void>;
  approveTemplate(protocol: Protocol, provider: JsonRpcProvider, templateId: string): Promise<void>;
  /** Lets `seconds` of chain time pass. */
  passTime(provider: JsonRpcProvider, seconds: number, note: (l: string) => void): Promise<void>;
  canWaitDays: boolean;
}

export async function localNetwork(
  group: ProcessGroup, runDir: string, deploymentId: string, note: (l: string) => void,
  at?: { address: string; wrapper: string[] }, // issue 11: the chain's host with --hosts
): Promise<ScenarioNetwork> {
  const port = at ? 8545 : await freePort(8545);
  note(`starting the local chain on ${at?.address ?? "127.0.0.1"}:${port} …`);
  const rpc = await startChain(group, port, undefined, at);
  note("deploying test USDC, registry, verifier Safe (2 of 3) and escrow through Ignition …");
  const deploymentFile = await deployLocal(rpc, deploymentId);
  const keyFiles = {} as Record<Role, string>;
  for (const role of ROLES) {
    keyFiles[role] = path.join(runDir, "keys", `${role}.key`);
    writeKey(keyFiles[role], TEST_KEYS[role]);
  }
  return {
    badge: "Local chain",
    rpc,
    deploymentFile,
    keyFiles,
    canWaitDays: true,
    fundGas: async (provider, address) => void (await provider.send("hardhat_setBalance", [address, "0x56BC75E2D63100000"])),
    // TestUSDC's faucet is open to anyone on a local chain.
    fundClient: async (protocol, client, amount) => void (await (await protocol.usdc.connect(client).mint(client.address, amount)).wait()),
    approveTemplate: async (protocol, provider, templateId) => {
      const owner = new Wallet(TEST_KEYS.owner, provider);
      await (await protocol.escrow.connect(owner).setTemplateApproval(templateId, true)).wait();
    },
    passTime: async (provider, seconds, note) => {
      await provider.send("evm_increaseTime", [seconds]);
      await provider.send("evm_mine", []);
      note(`advanced the local chain's clock by ${seconds} s`);
    },
  };
}

/** An existing deployment on a public test network. Keys: `<keysDir>/<role>.key`, each 0600. */
export function externalNetwork(rpc: string, deploymentFile: string, keysDir: string): ScenarioNetwork {
  const keyFiles = {} as Record<Role, string>;
  for (const role of ROLES) {
    keyFiles[role] = path.join(keysDir, `${role}.key`);
    loadKey(keyFiles[role]); // fail now, with the file's name, rather than in a child process later
  }
  return {
    badge: "Public test network",
    rpc,
    deploymentFile,
    keyFiles,
    canWaitDays: false,
    fundGas: async (provider, address, note) => {
      while ((await provider.getBalance(address)) === 0n) {
        note(`fund ${address} with test ETH for gas; waiting …`);
        await sleep(15_000);
      }
    },
    fundClient: async (protocol, client, amount) => {
      const balance = await protocol.usdc.balanceOf(client.address);
      if (balance < amount) throw new Error(`the client ${client.address} holds ${balance} test USDC units; the job needs ${amount}`);
    },
    approveTemplate: async (protocol, _provider, templateId) => {
      if (!(await protocol.escrow.isApprovedTemplate(templateId))) {
        throw new Error(`template ${templateId} is not approved on this escrow: its owner runs \`npx gpuchain job approve-template NAME\``);
      }
    },
    passTime: async (_provider, seconds, note) => {
      note(`waiting ${seconds} s of real time for the dispute window to pass …`);
      await sleep(seconds * 1000);
    },
  };
}
