/**
 * Low: the demo networks' verifiers must not be Hardhat's public test accounts. A verifier's sample (sampleSalt) is
 * keyed by its private key, so public keys would let anyone compute every verifier's sample. Two real local networks
 * (anvil, the Ignition deployment `npm start` makes): the Safe's owners, read on chain, are none of the mnemonic's
 * accounts, are the run's own 0600 key files, hold gas, and differ from one run to the next.
 */
import { expect } from "chai";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Contract, HDNodeWallet, JsonRpcProvider } from "ethers";
import { localNetwork, type ScenarioNetwork } from "../../demo/network.ts";
import { ProcessGroup } from "../../demo/processes.ts";
import { loadDeployment } from "../../sdk/node/deployment.ts";
import { loadKey } from "../../sdk/run/keys.ts";
import { SAFE_ABI } from "../../sdk/node/safeOwners.ts";

const HARDHAT_MNEMONIC = "test test test test test test test test test test test junk";
const HARDHAT_ACCOUNTS = Array.from({ length: 20 }, (_, i) =>
  HDNodeWallet.fromPhrase(HARDHAT_MNEMONIC, undefined, `m/44'/60'/0'/0/${i}`).address.toLowerCase(),
);
const VERIFIERS = ["verifier1", "verifier2", "verifier3"] as const;

interface Started {
  net: ScenarioNetwork;
  owners: string[];
  balances: bigint[];
}

describe("low: the demo networks' verifier keys are made per run, never Hardhat's public ones", function () {
  this.timeout(180_000);
  const dir = mkdtempSync(path.join(tmpdir(), "gpuchain-lows-verifiers-"));
  // A group per network: a group keys its children by name, so two networks' "chain" in one group would leave the
  // first node running past the run (and keep mocha from exiting).
  const groups: ProcessGroup[] = [];
  const ids = [1, 2].map((n) => `lows-verifiers-${process.pid}-${n}`);
  const runs: Started[] = [];

  async function start(n: number): Promise<Started> {
    const group = new ProcessGroup(() => {});
    groups.push(group);
    const net = await localNetwork(
      group,
      { runDir: path.join(dir, `run-${n}`), deploymentId: ids[n], node: "anvil" },
      () => {},
    );
    const provider = new JsonRpcProvider(net.rpc, undefined, { staticNetwork: true });
    try {
      const safe = new Contract(loadDeployment(net.deploymentFile).verifierSafe, SAFE_ABI, provider);
      const owners = ((await safe.getOwners()) as string[]).map((a) => a.toLowerCase());
      const balances = await Promise.all(owners.map((a) => provider.getBalance(a)));
      return { net, owners, balances };
    } finally {
      provider.destroy();
    }
  }

  before(async function () {
    // One network after the other: each starts its own anvil on a free port and deploys.
    for (const n of [0, 1]) runs.push(await start(n));
  });

  after(async function () {
    for (const group of groups) await group.stopAll(5_000);
    for (const id of ids) rmSync(path.join("ignition", "deployments", id), { recursive: true, force: true });
    rmSync(dir, { recursive: true, force: true });
  });

  it("the Safe's three owners are none of Hardhat's mnemonic accounts", function () {
    for (const { owners } of runs) {
      expect(owners).to.have.length(3);
      for (const owner of owners) expect(HARDHAT_ACCOUNTS, owner).to.not.include(owner);
    }
  });

  it("they are the run's verifier key files (0600), each funded for gas", function () {
    for (const { net, owners, balances } of runs) {
      const fromFiles = VERIFIERS.map((r) => loadKey(net.keyFiles[r]).address.toLowerCase());
      expect([...owners].sort()).to.deep.equal([...fromFiles].sort());
      for (const r of VERIFIERS) expect(statSync(net.keyFiles[r]).mode & 0o777, r).to.equal(0o600);
      for (const b of balances) expect(b > 0n).to.equal(true);
    }
  });

  it("a second run has other verifiers", function () {
    expect(runs[1].owners.filter((o) => runs[0].owners.includes(o))).to.deep.equal([]);
  });
});
