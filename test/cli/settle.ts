/**
 * `gpuchain settle` and what `gpuchain withdraw` says before a job settles, the real CLI (child
 * processes) against anvil and against Hardhat's node, the protocol deployed through Ignition: a job of one
 * checkpoint accepted and its verdict signed 2 of 3 through the real Safe. Boundaries as the escrow's statusOf has
 * them, at the block a sent transaction would land in (the pending one, whose time the test sets): at verdict +
 * window the window is still open (settle refuses, says from when); one second later anyone settles it, though no
 * block was mined since the window's last second — a key without gas money is told in one line how to fund it
 * (Hardhat words it differently from anvil), and the faucet command it names works. The dispute and the
 * arbiter's role are checked before anything is sent.
 */
import { runGpuchain, safeSignatures } from "../helpers/cli.ts";
import { expect } from "chai";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { HDNodeWallet, Mnemonic, Wallet, id, type ContractTransactionResponse, type JsonRpcProvider } from "ethers";
import { connectProtocol, protocolErrors, rpcProvider } from "../../sdk/node/contracts.ts";
import { explainError } from "../../sdk/node/errors.ts";
import { loadDeployment } from "../../sdk/node/deployment.ts";
import { checkpointDecisionDigest, escrowDomain, verdictDigest } from "../../sdk/rules/verifierSignatures.ts";
import { formatTime, formatUsdc } from "../../sdk/words/format.ts";
import { deployLocal, freePort, startAnvil, startChain, TEST_KEYS } from "../../demo/chain.ts";
import { ProcessGroup } from "../../demo/processes.ts";
import { loadTemplate } from "../../workloads/index.ts";
import { writeKey } from "../../sdk/run/keys.ts";
import { sendReport } from "../../agent/sends.ts";

const PRICE = 1_000n;
const WINDOW = 3_600n;

for (const node of ["anvil", "hardhat"] as const)
  describe(`gpuchain settle, and withdraw before a job settles (${node})`, function () {
    this.timeout(300_000);
    const group = new ProcessGroup(() => {});
    const deploymentId = `settle-${node}-${process.pid}`;
    const dir = mkdtempSync(path.join(tmpdir(), "gpuchain-settle-"));
    let chain: JsonRpcProvider;
    let common: string[];
    let windowEnd = 0n;
    let raceWindowEnd = 0n;
    const provider = HDNodeWallet.fromMnemonic(
      Mnemonic.fromPhrase("test test test test test test test test test test test junk"),
      "m/44'/60'/0'/0/9",
    );
    const providerKey = path.join(dir, "provider.key");
    const strangerKey = path.join(dir, "stranger.key");
    const poorKey = path.join(dir, "poor.key");
    const clientKey = path.join(dir, "client.key");
    const arbiterKey = path.join(dir, "arbiter.key");

    before(async function () {
      // Both nodes: each answers for its pending block (the time a sent settle would see) in its own way.
      const port = await freePort(0);
      const rpc = node === "anvil" ? await startAnvil(group, port, {}, "settle-chain") : await startChain(group, port);
      const file = await deployLocal(rpc, deploymentId);
      common = ["--rpc", rpc, "--deployment", file];
      chain = rpcProvider(rpc, 50);
      const d = loadDeployment(file);
      const { chainId } = await chain.getNetwork();
      const as = (key: string | HDNodeWallet) =>
        connectProtocol(d, typeof key === "string" ? new Wallet(key, chain) : key.connect(chain));
      const send = async (tx: Promise<ContractTransactionResponse>) => (await tx).wait();
      const templateId = loadTemplate("blobs-tiny").templateId;
      await send(as(TEST_KEYS.owner).escrow.setTemplateApproval(templateId, true));
      const p = as(provider);
      await send(p.registry.register("prov", PRICE, 0, "x86_64 CPU", 4096));
      await send(p.usdc.mint(provider.address, 10_000_000n));
      await send(p.usdc.approve(d.registry, 10_000_000n));
      await send(p.registry.depositStake(10_000_000n));
      const c = as(TEST_KEYS.client);
      await send(c.usdc.mint(new Wallet(TEST_KEYS.client).address, 200_000n));
      await send(c.usdc.approve(d.escrow, 200_000n));
      const request = {
        templateId,
        totalSteps: 10,
        checkpointInterval: 10,
        maxPricePerStep: PRICE,
        budget: 100_000n,
        disputeWindow: WINDOW,
      };
      const domain = escrowDomain(chainId, d.escrow);
      const sign2 = (digest: string) =>
        safeSignatures(chainId, d.verifierSafe, digest, [TEST_KEYS.verifier1, TEST_KEYS.verifier2]);
      const keeper = as(TEST_KEYS.keeper).escrow;
      /** Job `jobId`: one checkpoint of 10 steps by the provider, accepted and its verdict signed 2 of 3. */
      const jobWithVerdict = async (jobId: bigint) => {
        await send(c.escrow.createJob(request));
        await send(as(TEST_KEYS.coordinator).escrow.assign(jobId, provider.address));
        const hash = id(`settle:${jobId}:10`);
        await send(sendReport(p.escrow, jobId, 1n, 10, hash));
        const accept = { jobId, epoch: 1n, step: 10, checkpointHash: hash, accept: true };
        await send(keeper.acceptCheckpoint(jobId, 1n, 10, hash, await sign2(checkpointDecisionDigest(domain, accept))));
        const verdict = { jobId, modelHash: hash, metric: 9_000n, passed: true };
        await send(keeper.submitVerdict(jobId, hash, 9_000n, true, await sign2(verdictDigest(domain, verdict))));
        return (await p.escrow.verdictOf(jobId)).submittedAt + WINDOW;
      };
      windowEnd = await jobWithVerdict(1n);
      raceWindowEnd = await jobWithVerdict(2n);
      await send(c.usdc.mint(new Wallet(TEST_KEYS.client).address, 100_000n));
      await send(c.usdc.approve(d.escrow, 100_000n));
      await jobWithVerdict(3n); // disputed below; the client's balance is 0 after it
      writeKey(providerKey, provider.privateKey);
      writeKey(clientKey, TEST_KEYS.client);
      writeKey(arbiterKey, TEST_KEYS.arbiter);
      writeKey(strangerKey, TEST_KEYS.keeper); // any funded key: settling needs no role
    });

    after(async function () {
      chain?.destroy();
      await group.stopAll(3_000);
      rmSync(path.join("ignition", "deployments", deploymentId), { recursive: true, force: true });
      rmSync(dir, { recursive: true, force: true });
    });

    /** Mines one block at chain time `at`. */
    const mineAt = async (at: bigint) => {
      await chain.send("evm_setNextBlockTimestamp", [Number(at)]);
      await chain.send("evm_mine", []);
    };

    it("in the dispute window: withdraw says the earnings are claimable from the window's end, settle refuses and says when", async function () {
      const from = formatTime(windowEnd + 1n);
      const w = await runGpuchain(["withdraw", ...common, "--key", providerKey]);
      expect(w.code, w.stderr).to.equal(0);
      expect(w.stdout).to.contain(
        `job 1: 0.010000 USDC earned, claimable once the job settles (DisputeWindow now; when its dispute window ends: from ${from}`,
      );
      const s = await runGpuchain(["settle", "1", ...common, "--key", strangerKey]);
      expect(s.code, s.stdout).to.equal(1);
      expect(s.stderr).to.match(
        new RegExp(`^gpuchain: job 1 cannot be settled now: when its dispute window ends: from ${from} \\(in `, "m"),
      );
    });

    it("the client is told its unspent budget comes back at settlement; a wrong key or a short balance disputes nothing and sends nothing", async function () {
      const w = await runGpuchain(["withdraw", ...common, "--key", clientKey]);
      expect(w.code, w.stderr).to.equal(0);
      expect(w.stdout).to.contain(
        "job 1: 0.090000 USDC of your budget is unspent so far; it comes back when the job settles " +
          `(DisputeWindow now; when its dispute window ends: from ${formatTime(windowEnd + 1n)}`,
      );
      const before = await chain.getBlockNumber();
      const client = new Wallet(TEST_KEYS.client).address;
      const stranger = await runGpuchain(["dispute", "3", ...common, "--key", strangerKey]);
      expect(stranger.code, stranger.stdout).to.equal(1);
      expect(stranger.stderr.trim()).to.equal(
        `gpuchain: only job 3's client ${client} may dispute it; this key is ${new Wallet(TEST_KEYS.keeper).address}`,
      );
      for (const extra of [[], ["--dry-run"]]) {
        const poor = await runGpuchain(["dispute", "3", ...common, "--key", clientKey, ...extra]);
        expect(poor.code, poor.stdout).to.equal(1);
        expect(poor.stderr.trim()).to.equal(
          `gpuchain: the dispute bond needs 50.000000 USDC and ${client} holds 0.000000 USDC ` +
            `(on a development chain: gpuchain faucet ${client} --usdc N)`,
        );
      }
      expect(await chain.getBlockNumber(), "no approval sent").to.equal(before);
    });

    it("the client disputes with the bond; the arbiter's role is checked before sending, also in a dry run", async function () {
      const client = new Wallet(TEST_KEYS.client).address;
      expect((await runGpuchain(["faucet", client, "--usdc", "50", ...common])).code).to.equal(0);
      const d = await runGpuchain(["dispute", "3", ...common, "--key", clientKey]);
      expect(d.code, d.stderr).to.equal(0);
      expect(d.stdout).to.match(/^job 3 disputed \(tx 0x[0-9a-f]{64}\); bond 50\.000000 USDC$/m);
      const before = await chain.getBlockNumber();
      const arbiter = new Wallet(TEST_KEYS.arbiter).address;
      for (const extra of [[], ["--dry-run"]]) {
        const wrong = await runGpuchain([
          "arbiter",
          "resolve",
          "3",
          "--reject",
          ...common,
          "--key",
          clientKey,
          ...extra,
        ]);
        expect(wrong.code, wrong.stdout).to.equal(1);
        expect(wrong.stderr.trim()).to.equal(
          `gpuchain: only the escrow's arbiter ${arbiter} may resolve a dispute; this key is ${client}`,
        );
      }
      const dry = await runGpuchain([
        "arbiter",
        "resolve",
        "3",
        "--reject",
        ...common,
        "--key",
        arbiterKey,
        "--dry-run",
      ]);
      expect(dry.stdout, dry.stderr).to.contain("would reject the dispute on job 3");
      expect(await chain.getBlockNumber()).to.equal(before);
      // Sent anyway (another tool, an old CLI), the escrow's revert reads in a person's terms after its own name.
      const escrow = connectProtocol(loadDeployment(common[3]), new Wallet(TEST_KEYS.client, chain)).escrow;
      const reverted = await escrow.resolveDispute(3n, false).then(
        () => "sent",
        (err: unknown) => explainError(err, protocolErrors()),
      );
      expect(reverted).to.equal(
        `JobEscrowNotArbiter(${client}, ${arbiter}): only the escrow's arbiter ${arbiter} may resolve a dispute; ` +
          `this key is ${client}`,
      );
    });

    it("at verdict + window exactly: still the window, nothing sent", async function () {
      // The next block's time is what a settle sent now would see: here, the window's last second.
      await chain.send("evm_setNextBlockTimestamp", [Number(windowEnd)]);
      const before = await chain.getBlockNumber();
      const s = await runGpuchain(["settle", "1", ...common, "--key", strangerKey]);
      expect(s.code, s.stdout).to.equal(1);
      expect(s.stderr).to.contain("cannot be settled now: when its dispute window ends");
      expect(await chain.getBlockNumber()).to.equal(before);
    });

    it("one second later: --dry-run sends nothing; a stranger settles it; the provider then claims", async function () {
      // The latest block is the window's last second and none is mined after it (a development chain with no
      // traffic): a settle sent now lands one second later, so the command must not wait for a block that no one mines.
      await mineAt(windowEnd);
      await chain.send("evm_setNextBlockTimestamp", [Number(windowEnd + 1n)]);
      const dry = await runGpuchain(["settle", "1", ...common, "--key", strangerKey, "--dry-run"]);
      expect(dry.code, dry.stderr).to.equal(0);
      expect(dry.stdout).to.contain("would settle job 1 (its dispute window has ended)");
      const w = await runGpuchain(["withdraw", ...common, "--key", providerKey, "--dry-run"]);
      expect(w.stdout).to.contain("(Settleable now; its dispute window has ended; settle it: gpuchain settle 1)");
      // A key without gas money: one line with its address, balance, the need and the command that funds it.
      const poor = Wallet.createRandom();
      writeKey(poorKey, poor.privateKey);
      const before = await chain.getBlockNumber();
      const broke = await runGpuchain(["settle", "1", ...common, "--key", poorKey]);
      expect(broke.code, broke.stdout).to.equal(1);
      expect(broke.stderr.trim().split("\n")).to.have.length(1);
      expect(broke.stderr).to.match(
        new RegExp(
          `^gpuchain: settle failed: out of gas money: ${poor.address} holds 0\\.0 ETH, this send needs up to [0-9.]+ ETH \\(gas limit \\d+ × max fee [0-9.]+ gwei`,
        ),
      );
      expect(broke.stderr).to.contain(`fund it: gpuchain faucet ${poor.address} --rpc URL`);
      expect(await chain.getBlockNumber()).to.equal(before);
      const funded = await runGpuchain(["faucet", poor.address, ...common]);
      expect(funded.code, funded.stderr).to.equal(0);
      expect(await chain.getBalance(poor.address)).to.be.greaterThan(0n);
      const s = await runGpuchain(["settle", "1", ...common, "--key", strangerKey]);
      expect(s.code, s.stderr).to.equal(0);
      expect(s.stdout).to.match(/^job 1 settled \(tx 0x[0-9a-f]{64}\): its dispute window has ended$/m);
      const again = await runGpuchain(["settle", "1", ...common, "--key", strangerKey]);
      expect(again.code).to.equal(1);
      expect(again.stderr).to.contain("job 1 cannot be settled now: it is settled already");
      const claimed = await runGpuchain(["withdraw", ...common, "--key", providerKey]);
      expect(claimed.code, claimed.stderr).to.equal(0);
      expect(claimed.stdout).to.contain("job 1: claimed 0.010000 USDC");
    });

    it("the finalizer's claim is in the pool when the provider withdraws: withdraw waits for it to be mined, says so, and withdraws", async function () {
      // Job 2's window ends within seconds of job 1's, which the tests above already mined past.
      if (BigInt((await chain.getBlock("latest"))!.timestamp) <= raceWindowEnd) await mineAt(raceWindowEnd + 1n);
      const stranger = connectProtocol(loadDeployment(common[3]), new Wallet(TEST_KEYS.keeper, chain)).escrow;
      await (await stranger.settle(2n)).wait();
      const owedBefore = await stranger.owed(provider.address);
      await chain.send("evm_setAutomine", [false]);
      try {
        // The keeper's claim for the provider, waiting in the pool with a higher tip: it goes first in the block.
        const tip = 50n * 10n ** 9n;
        await stranger.claimEarnings(2n, provider.address, { maxPriorityFeePerGas: tip, maxFeePerGas: 4n * tip });
        // The provider's own withdraw finds its claim taken in the pool (an estimate against the pending block
        // fails) or sends it anyway (against the latest): either way the block is mined only once it says so.
        let said!: () => void;
        const saidIt = new Promise<void>((resolve) => (said = resolve));
        const withdrawing = runGpuchain(["withdraw", ...common, "--key", providerKey, "--jobs", "2"], {}, (out) => {
          if (/claim job 2: sent|waiting up to/.test(out)) said();
        });
        await Promise.race([saidIt, withdrawing]);
        await chain.send("evm_mine", []);
        await chain.send("evm_setAutomine", [true]);
        const w = await withdrawing;
        expect(w.code, w.stderr + w.stdout).to.equal(0);
        expect(w.stdout).to.contain("job 2: 0.010000 USDC was claimed for you by someone else's transaction");
        expect(w.stdout).to.contain(`withdrew ${formatUsdc(owedBefore + 10_000n)} to ${provider.address}`);
      } finally {
        await chain.send("evm_setAutomine", [true]);
      }
      expect(await stranger.queryFilter(stranger.filters.EarningsReleased(2n)), "one release").to.have.length(1);
      expect(await stranger.owed(provider.address)).to.equal(0n);
    });
  });
