/**
 * The keepers' senders on the transaction manager, on a real anvil: `contractSender` (what
 * keeperContext builds for a key) through a managed wallet gets a stuck call replaced at its nonce and waits for
 * the replacement's receipt; the same call sent again while pending is not a second transaction; `sendMany` hands
 * out consecutive nonces; `execute` with a key that has no gas money
 * gives one "failed" outcome that says how to fund it, never a throw (a keeper does not crash-loop on it).
 * The called contract logs its calldata (as in test/sdk/reorg.ts), so "ran once" is a count of logs.
 */
import { expect } from "chai";
import { Contract, Interface, JsonRpcProvider, Wallet } from "ethers";
import { freePort, startAnvil, TEST_KEYS } from "../../demo/chain.ts";
import { ProcessGroup } from "../../demo/processes.ts";
import { contractSender, DEFAULT_RETRY, execute, type KeeperContext } from "../../keepers/chain.ts";
import { protocolInterfaces } from "../../sdk/node/contracts.ts";
import { createLogger } from "../../sdk/run/log.ts";
import { managedWallet } from "../../sdk/node/txManager.ts";

const RUNTIME = "366000600037600136600" + "0a100";
const INIT = "0x6c" + RUNTIME + "600052600d6013f3";
const ABI = new Interface(["function ping(uint256 n)"]);

describe("keepers: sending on a fee market (anvil)", function () {
  this.timeout(120_000);
  const group = new ProcessGroup(() => {});
  let provider: JsonRpcProvider;
  let emitter: string;
  const lines: string[] = [];
  const logger = createLogger({ component: "keeper", write: (l) => lines.push(l) });

  async function keeperKey(balance = "0x8AC7230489E80000") {
    const key = Wallet.createRandom();
    await provider.send("anvil_setBalance", [key.address, balance]);
    const wallet = managedWallet(new Wallet(key.privateKey), provider, {
      logger,
      pollMs: 40,
      speedUp: { afterBlocks: 2, afterMs: 600_000 },
    });
    return { wallet, contract: new Contract(emitter, ABI, wallet) };
  }
  const pings = async (n: bigint) =>
    (await provider.getLogs({ address: emitter, fromBlock: 0 })).filter(
      (l) => l.data === ABI.encodeFunctionData("ping", [n]),
    ).length;

  before(async function () {
    const rpc = await startAnvil(group, await freePort(0), {}, "keeper-fee-chain");
    provider = new JsonRpcProvider(rpc, undefined, { staticNetwork: true, cacheTimeout: -1, pollingInterval: 40 });
    const deployer = new Wallet(TEST_KEYS.client, provider);
    emitter = (await (await deployer.sendTransaction({ data: INIT })).wait())!.contractAddress!;
  });

  after(async function () {
    provider.destroy();
    await group.stopAll(3_000);
  });

  it("a keeper's call stuck below a base-fee spike: replaced at its nonce, the replacement's receipt returned, ran once", async function () {
    const { wallet, contract } = await keeperKey();
    const sender = contractSender(contract);
    await provider.send("evm_setAutomine", [false]);
    try {
      const handle = await sender.send("ping", [1n], 60_000n);
      const first = (await provider.getTransaction(handle.hash))!;
      await provider.send("anvil_setNextBlockBaseFeePerGas", [String(first.maxFeePerGas! * 2n)]);
      const waiting = handle.wait();
      let receipt;
      for (let i = 0; i < 40 && receipt === undefined; i++) {
        await provider.send("evm_mine", []);
        receipt = await Promise.race([waiting, new Promise<undefined>((r) => setTimeout(() => r(undefined), 150))]);
      }
      expect(receipt!.status).to.equal(1);
      expect(receipt!.hash).to.not.equal(handle.hash);
      expect((await provider.getTransaction(receipt!.hash))!.nonce).to.equal(first.nonce);
      expect(await pings(1n)).to.equal(1);
      expect(await provider.getTransactionCount(wallet.address, "latest")).to.equal(1);
    } finally {
      await provider.send("evm_setAutomine", [true]);
    }
  });

  it("the same call sent again while the first is pending gets the pending one's handle: one nonce, ran once", async function () {
    const { wallet, contract } = await keeperKey();
    const sender = contractSender(contract);
    await provider.send("evm_setAutomine", [false]);
    try {
      const first = await sender.send("ping", [5n], 60_000n);
      const again = await sender.send("ping", [5n], 60_000n); // a next tick, its receipt wait having timed out
      expect(again.hash).to.equal(first.hash);
      const other = await sender.send("ping", [6n], 60_000n); // another call is another transaction
      expect(other.hash).to.not.equal(first.hash);
      await provider.send("evm_mine", []);
      expect((await again.wait())!.status).to.equal(1);
      expect((await other.wait())!.status).to.equal(1);
      expect(await pings(5n)).to.equal(1);
      expect(await provider.getTransactionCount(wallet.address, "latest")).to.equal(2);
      // Once mined, the same call is a new transaction again (a keeper that means to repeat it may).
      await provider.send("evm_setAutomine", [true]);
      const later = await sender.send("ping", [5n], 60_000n);
      expect(later.hash).to.not.equal(first.hash);
    } finally {
      await provider.send("evm_setAutomine", [true]);
    }
  });

  it("sendMany: consecutive nonces from the manager, each call mined once", async function () {
    const { wallet, contract } = await keeperKey();
    const sender = contractSender(contract);
    await sender.send("ping", [10n], 60_000n); // the manager already holds nonce 0
    const handles = await sender.sendMany!(
      "ping",
      [11n, 12n, 13n].map((n) => ({ args: [n], gasLimit: 60_000n })),
    );
    const nonces = [];
    for (const h of handles) {
      if ("error" in h) throw h.error;
      expect((await h.wait())!.status).to.equal(1);
      nonces.push((await provider.getTransaction(h.hash))!.nonce);
    }
    expect(nonces).to.deep.equal([1, 2, 3]);
    for (const n of [11n, 12n, 13n]) expect(await pings(n)).to.equal(1);
    expect(await provider.getTransactionCount(wallet.address, "latest")).to.equal(4);
  });

  it("a keeper key without gas money: a 'failed' outcome whose error says how to fund it, no throw", async function () {
    const { wallet, contract } = await keeperKey("0x0");
    const ctx = {
      escrow: { interface: protocolInterfaces().escrow },
      sender: contractSender(contract),
      logger,
      nowMs: Date.now,
      dryRun: false,
      txTimeoutMs: 10_000,
      rpcTimeoutMs: 10_000,
      retry: DEFAULT_RETRY,
    } as unknown as KeeperContext;
    const outcome = await execute(ctx, { method: "ping", args: [99n], gasLimit: 60_000n }, logger);
    expect(outcome.kind).to.equal("failed");
    const error = (outcome as { error: string }).error;
    expect(error).to.include(`out of gas money: ${wallet.address} holds 0.0 ETH`);
    expect(error).to.include(`gpuchain faucet ${wallet.address}`);
    expect(await pings(99n)).to.equal(0);
  });
});
