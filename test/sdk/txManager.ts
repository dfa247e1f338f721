/**
 * sdk/node/txManager.ts on a real anvil: a transaction stuck below a spiked base fee is replaced once
 * at the same nonce and mined once; the fee cap is never exceeded (at the cap it keeps waiting, said once); one
 * key's concurrent sends get consecutive nonces, also from two processes; a transaction a reorganisation dropped
 * is mined again once with the same bytes; a nonce taken by another sender is an error, not a hang; and an empty
 * account's send fails with one line that says how to fund it.
 * The called contract logs its calldata, so "took effect exactly once" is a count of logs.
 */
import { expect } from "chai";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { hexlify, Interface, JsonRpcProvider, Network, parseUnits, toUtf8Bytes, Wallet } from "ethers";
import { freePort, startAnvil, TEST_KEYS } from "../../demo/chain.ts";
import { ProcessGroup } from "../../demo/processes.ts";
import { classifyError } from "../../sdk/node/errors.ts";
import { startFaultProxy } from "../../sdk/node/faultProxy.ts";
import { JsonRpcClient } from "../../sdk/node/jsonRpc.ts";
import { createLogger } from "../../sdk/run/log.ts";
import {
  FeeAboveCapError,
  InsufficientFundsError,
  managedWallet,
  ManagedWallet,
  mined,
  NonceTakenError,
  txStats,
  type TxManagerOptions,
} from "../../sdk/node/txManager.ts";

/** Runtime: LOG1(topic 1) of its calldata (as in test/sdk/reorg.ts). */
const RUNTIME = "366000600037600136600" + "0a100";
const INIT = "0x6c" + RUNTIME + "600052600d6013f3";
const gwei = (n: string) => parseUnits(n, "gwei");
const tag = (s: string) => hexlify(toUtf8Bytes(s));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("sdk/txManager: transactions on a fee market (anvil)", function () {
  this.timeout(120_000);
  const group = new ProcessGroup(() => {});
  let rpc: string;
  let provider: JsonRpcProvider;
  let emitter: string;
  let lockDir: string;
  const lines: string[] = [];
  const logger = createLogger({
    component: "tx",
    write: (l) => (lines.push(l), process.env.TX_LOGS && console.log(l)),
  });

  /** A fresh key with 10 ETH and a manager on its own provider (a manager is one per key and provider). */
  async function freshWallet(o: TxManagerOptions = {}, fund = "0x8AC7230489E80000"): Promise<ManagedWallet> {
    const key = Wallet.createRandom();
    await provider.send("anvil_setBalance", [key.address, fund]);
    return managedWallet(new Wallet(key.privateKey), provider, { pollMs: 40, logger, lockDir, ...o });
  }
  const logsOf = async (data: string) =>
    (await provider.getLogs({ address: emitter, fromBlock: 0 })).filter((l) => l.data === data);
  /** Mines a block every `ms` until `p` settles (each at base fee `hold`, when given: a spike that lasts). */
  async function mineUntil<T>(p: Promise<T>, ms = 150, hold?: bigint): Promise<T> {
    let done = false;
    const settled = p.finally(() => (done = true));
    while (!done) {
      if (hold !== undefined) await provider.send("anvil_setNextBlockBaseFeePerGas", [String(hold)]);
      await provider.send("evm_mine", []);
      await Promise.race([settled.catch(() => undefined), sleep(ms)]);
    }
    return settled;
  }

  before(async function () {
    lockDir = mkdtempSync(path.join(os.tmpdir(), "gpuchain-keys-"));
    rpc = await startAnvil(group, await freePort(0), {}, "fee-chain");
    provider = new JsonRpcProvider(rpc, undefined, { staticNetwork: true, cacheTimeout: -1, pollingInterval: 40 });
    const deployer = new Wallet(TEST_KEYS.client, provider);
    emitter = (await (await deployer.sendTransaction({ data: INIT })).wait())!.contractAddress!;
  });

  afterEach(async function () {
    await provider.send("anvil_setNextBlockBaseFeePerGas", [String(gwei("1"))]); // no spike left for the next test
    await provider.send("evm_mine", []);
    await provider.send("evm_setAutomine", [true]);
    lines.length = 0;
  });

  after(async function () {
    provider.destroy();
    await group.stopAll(3_000);
    rmSync(lockDir, { recursive: true, force: true });
  });

  it("a transaction stuck below a base-fee spike is replaced once at the same nonce and mined once", async function () {
    const w = await freshWallet({ speedUp: { afterBlocks: 2, afterMs: 600_000 } });
    const stats = { ...txStats };
    await provider.send("evm_setAutomine", [false]);
    const data = tag("stuck-once");
    const sent = await w.sendTransaction({ to: emitter, data, gasLimit: 60_000n });
    const first = w.manager;
    expect(sent.nonce).to.equal(0);
    const offered = sent.maxFeePerGas!;
    // The next blocks' base fee jumps above what the first version offers: it cannot be mined.
    const receipt = (await mineUntil(mined(sent), 150, offered + gwei("1")))!;

    expect(receipt.status).to.equal(1);
    expect(receipt.hash, "the replacement's receipt").to.not.equal(sent.hash);
    const replacement = (await provider.getTransaction(receipt.hash))!;
    expect(replacement.nonce, "same nonce").to.equal(sent.nonce);
    expect(replacement.maxFeePerGas! >= offered + (offered * 100n) / 1000n, "≥ +10 %").to.equal(true);
    expect(await provider.getTransaction(sent.hash), "the first version is gone").to.equal(null);
    expect(await logsOf(data), "the call took effect exactly once").to.have.length(1);
    expect(await provider.getTransactionCount(w.address, "latest"), "no other nonce used").to.equal(1);
    expect(lines.filter((l) => l.includes("re-sent at the same nonce"))).to.have.length(1);
    expect(txStats.speedUps - stats.speedUps).to.equal(1);
    expect(txStats.sent - stats.sent).to.equal(1);
    expect(first).to.equal(w.manager);
  });

  it("a speed-up whose every answer was lost (the node took it) is still the one followed: mined once, no 'nonce taken'", async function () {
    let raws = 0;
    const p = await startFaultProxy({
      target: rpc,
      script: ({ methods }) => (methods.includes("eth_sendRawTransaction") && ++raws > 1 ? "drop" : "pass"),
    });
    const net = Network.from(31337n);
    const c = new JsonRpcClient(
      p.url,
      net,
      { staticNetwork: net, cacheTimeout: -1, batchMaxCount: 1 },
      { budgetMs: 1_000 },
    );
    try {
      const key = Wallet.createRandom();
      await provider.send("anvil_setBalance", [key.address, "0x8AC7230489E80000"]);
      const w = managedWallet(new Wallet(key.privateKey), c, {
        pollMs: 40,
        logger,
        lockDir,
        speedUp: { afterBlocks: 2, afterMs: 600_000 },
      });
      await provider.send("evm_setAutomine", [false]);
      const data = tag("answer-lost");
      const sent = await w.sendTransaction({ to: emitter, data, gasLimit: 60_000n });
      const receipt = (await mineUntil(mined(sent), 300, sent.maxFeePerGas! + gwei("1")))!;
      expect(raws, "the replacement's broadcasts were all dropped").to.be.at.least(2);
      expect(receipt.hash).to.not.equal(sent.hash);
      expect(await logsOf(data)).to.have.length(1);
      expect(await provider.getTransactionCount(w.address, "latest")).to.equal(1);
    } finally {
      c.destroy();
      await p.stop();
    }
  });

  it("never offers more than the cap: at the cap it keeps waiting (said once) and is mined when the fee falls", async function () {
    const cap = gwei("6");
    const w = await freshWallet({ maxFeeWei: cap, speedUp: { afterBlocks: 1, afterMs: 600_000 } });
    const held = txStats.atCap;
    await provider.send("evm_setAutomine", [false]);
    const data = tag("capped");
    const sent = await w.sendTransaction({ to: emitter, data, gasLimit: 60_000n });
    await provider.send("anvil_setNextBlockBaseFeePerGas", [String(gwei("20"))]);
    const waiting = mined(sent);
    for (let i = 0; i < 8; i++) {
      await provider.send("evm_mine", []);
      await sleep(120);
    }
    expect(lines.filter((l) => l.includes("at the fee cap"))).to.have.length(1);
    expect(txStats.atCap - held).to.equal(1);
    // The fee falls back under the cap: the last version is mined.
    await provider.send("anvil_setNextBlockBaseFeePerGas", [String(gwei("1"))]);
    const receipt = (await mineUntil(waiting))!;
    expect(receipt.status).to.equal(1);
    const tx = (await provider.getTransaction(receipt.hash))!;
    expect(tx.maxFeePerGas! <= cap).to.equal(true);
    for (const l of lines.filter((x) => x.includes("re-sent"))) {
      const fee = JSON.parse(l).fees as string;
      expect(Number(/max fee ([\d.]+) gwei/.exec(fee)![1]) <= 6, fee).to.equal(true);
    }
    expect(await logsOf(data)).to.have.length(1);
  });

  it("a base fee above the cap: not sent, one line saying so (retryable), sent once the fee falls", async function () {
    const w = await freshWallet({ maxFeeWei: gwei("3") });
    await provider.send("anvil_setNextBlockBaseFeePerGas", [String(gwei("5"))]);
    await provider.send("evm_mine", []);
    let error: Error | undefined;
    await w.sendTransaction({ to: emitter, data: tag("over-cap"), gasLimit: 60_000n }).catch((e) => (error = e));
    expect(error).to.be.instanceOf(FeeAboveCapError);
    expect(error!.message).to.match(/^not sent: the network's base fee \(4.375 gwei\) is above the fee cap \(3 gwei/);
    expect(classifyError(error, new Interface([]))).to.equal("retryable");
    expect(await provider.getTransactionCount(w.address, "pending")).to.equal(0);
    await provider.send("anvil_setNextBlockBaseFeePerGas", [String(gwei("1"))]);
    await provider.send("evm_mine", []);
    const sent = await w.sendTransaction({ to: emitter, data: tag("over-cap"), gasLimit: 60_000n });
    expect(sent.nonce).to.equal(0);
    expect(sent.maxFeePerGas! <= gwei("3")).to.equal(true);
    expect((await mined(sent))!.status).to.equal(1);
  });

  it("concurrent sends from one key get consecutive nonces, all mined", async function () {
    const w = await freshWallet();
    const sent = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        w.sendTransaction({ to: emitter, data: tag(`many-${i}`), gasLimit: 60_000n }),
      ),
    );
    expect(sent.map((t) => t.nonce)).to.deep.equal([...Array(12).keys()]);
    const receipts = await Promise.all(sent.map((t) => mined(t)));
    expect(receipts.every((r) => r!.status === 1)).to.equal(true);
    expect(await provider.getTransactionCount(w.address, "latest")).to.equal(12);
  });

  it("two processes on one key coordinate: every nonce used once, none skipped, all mined", async function () {
    const key = Wallet.createRandom();
    await provider.send("anvil_setBalance", [key.address, "0x8AC7230489E80000"]);
    const run = (t: string) =>
      new Promise<{ code: number | null; out: string }>((resolve) => {
        const child = spawn(process.execPath, ["test/helpers/keySender.ts", rpc, key.privateKey, emitter, "10", t], {
          env: { ...process.env, GPUCHAIN_KEY_LOCK_DIR: lockDir },
          stdio: ["ignore", "pipe", "pipe"],
        });
        let out = "";
        child.stdout.on("data", (d) => (out += d));
        child.stderr.on("data", (d) => (out += d));
        child.on("exit", (code) => resolve({ code, out }));
      });
    const [a, b] = await Promise.all([run("proc-a"), run("proc-b")]);
    expect(a.code, a.out).to.equal(0);
    expect(b.code, b.out).to.equal(0);
    const nonces = [...JSON.parse(a.out).nonces, ...JSON.parse(b.out).nonces].sort((x, y) => x - y);
    expect(nonces).to.deep.equal([...Array(20).keys()]);
    expect(await provider.getTransactionCount(key.address, "latest")).to.equal(20);
  });

  it("a transaction a reorganisation dropped is re-broadcast with the same bytes and mined once at depth", async function () {
    const w = await freshWallet({ confirmations: 2 });
    const data = tag("reorged");
    const sent = await w.sendTransaction({ to: emitter, data, gasLimit: 60_000n });
    const minedAt = (await provider.getTransactionReceipt(sent.hash))!.blockNumber;
    const waiting = mined(sent);
    await provider.send("evm_mine", []);
    await sleep(200); // the manager has seen it mined, one block deep
    await provider.send("anvil_rollback", [2]); // its block is gone
    expect(await provider.getTransactionReceipt(sent.hash)).to.equal(null);
    const receipt = (await mineUntil(waiting, 200))!;
    expect(receipt.hash, "the same signed transaction").to.equal(sent.hash);
    expect((await provider.getBlockNumber()) - receipt.blockNumber >= 2, "at the confirmation depth").to.equal(true);
    expect(receipt.blockNumber).to.be.at.most(minedAt + 1);
    expect(lines.filter((l) => l.includes("re-broadcast")).length, "the manager re-broadcast it").to.be.at.least(1);
    expect(await logsOf(data), "it ran once").to.have.length(1);
    expect(await provider.getTransactionCount(w.address, "latest")).to.equal(1);
  });

  it("a nonce another sender took is an error for the waiter (the call did not run), not a hang", async function () {
    const w = await freshWallet({ speedUp: { afterBlocks: 50, afterMs: 600_000 } });
    await provider.send("evm_setAutomine", [false]);
    const sent = await w.sendTransaction({ to: emitter, data: tag("taken"), gasLimit: 60_000n });
    // The same key in another program, at the same nonce with higher fees: the pool keeps that one.
    const other = new Wallet(w.privateKey, provider);
    await other.sendTransaction({
      to: emitter,
      data: tag("other"),
      gasLimit: 60_000n,
      nonce: sent.nonce,
      maxFeePerGas: sent.maxFeePerGas! * 2n,
      maxPriorityFeePerGas: sent.maxPriorityFeePerGas! * 2n,
    });
    let error: unknown;
    await mineUntil(mined(sent).catch((e) => (error = e)));
    expect(error).to.be.instanceOf(NonceTakenError);
    expect(await logsOf(tag("taken"))).to.have.length(0);
    // The manager resyncs: its next send takes the next free nonce.
    await provider.send("evm_setAutomine", [true]);
    const next = await w.sendTransaction({ to: emitter, data: tag("after"), gasLimit: 60_000n });
    expect(next.nonce).to.equal(1);
    expect((await mined(next))!.status).to.equal(1);
  });

  it("an account without gas money: one error line with its address, balance, the need and how to fund it", async function () {
    const w = await freshWallet({}, "0x3e8"); // 1000 wei
    let error: Error | undefined;
    await w.sendTransaction({ to: emitter, data: tag("poor"), gasLimit: 60_000n }).catch((e) => (error = e));
    expect(error).to.be.instanceOf(InsufficientFundsError);
    expect(error!.message).to.not.include("\n");
    expect(error!.message).to.include(w.address);
    expect(error!.message).to.include("holds 0.000000000000001 ETH");
    expect(error!.message).to.match(/needs up to [\d.]+ ETH \(gas limit 60000 × max fee/);
    expect(error!.message).to.include(`gpuchain faucet ${w.address}`);
    // Funded, the same manager sends at nonce 0.
    await provider.send("anvil_setBalance", [w.address, "0x8AC7230489E80000"]);
    const ok = await w.sendTransaction({ to: emitter, data: tag("funded"), gasLimit: 60_000n });
    expect(ok.nonce).to.equal(0);
  });
});
