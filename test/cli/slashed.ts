/**
 * `gpuchain explain` and `gpuchain wallet` after a real slash: the protocol deployed through Ignition on anvil, a
 * provider staked, assigned, one checkpoint accepted, the next refused with a fault signed 2 of 3 through the
 * real Safe (refuseWithFault), then the real CLI (child processes) reads it back from the chain — including that
 * the slashed provider is not assigned again until it re-stakes (deposits again).
 */
import { runGpuchain, safeSignatures } from "../helpers/cli.ts";
import { expect } from "chai";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { HDNodeWallet, Mnemonic, Wallet, id, type JsonRpcProvider } from "ethers";
import { connectProtocol, rpcProvider } from "../../sdk/node/contracts.ts";
import { loadDeployment } from "../../sdk/node/deployment.ts";
import { checkpointDecisionDigest, escrowDomain, faultRefusalDigest } from "../../sdk/rules/verifierSignatures.ts";
import { deployLocal, freePort, startAnvil, TEST_KEYS } from "../../demo/chain.ts";
import { ProcessGroup } from "../../demo/processes.ts";
import { withGasHeadroom } from "../../sdk/node/gas.ts";
import { sendReport } from "../../agent/sends.ts";
import { loadTemplate } from "../../workloads/index.ts";
import { writeKey } from "../../sdk/run/keys.ts";

const USDC = 1_000_000n;
const PRICE = 1_000n; // per step
const STAKE = 10n * USDC;
const MIN_STAKE = USDC; // Ignition's local default: the lock is max(price × interval, minStake)

describe("gpuchain explain / wallet after a real slash", function () {
  this.timeout(300_000); // an Ignition deployment and four CLI processes on a loaded 2-core machine
  const group = new ProcessGroup(() => {});
  const deploymentId = `slashed-${process.pid}`;
  let chain: JsonRpcProvider;
  let rpc: string;
  let file: string;
  const mallory = HDNodeWallet.fromMnemonic(
    Mnemonic.fromPhrase("test test test test test test test test test test test junk"),
    "m/44'/60'/0'/0/9",
  );
  const finder = new Wallet(TEST_KEYS.verifier3);
  /** The slash's block and its time, as `restakeLine` prints them. */
  let slashBlock = 0;
  let slashTime = "";
  let deposit: (amount: bigint) => Promise<unknown>;

  before(async function () {
    rpc = await startAnvil(group, await freePort(0), {}, "slashed-chain");
    file = await deployLocal(rpc, deploymentId);
    chain = rpcProvider(rpc, 50);
    const d = loadDeployment(file);
    const { chainId } = await chain.getNetwork();
    const as = (key: string | HDNodeWallet) =>
      connectProtocol(d, typeof key === "string" ? new Wallet(key, chain) : key.connect(chain));
    const send = async (tx: Promise<{ wait: () => Promise<unknown> }>) => (await tx).wait();
    const templateId = loadTemplate("blobs-tiny").templateId;
    await send(as(TEST_KEYS.owner).escrow.setTemplateApproval(templateId, true));
    // mallory registers, stakes 10 USDC; the client posts a job of 100 steps, a checkpoint every 10.
    const m = as(mallory);
    await send(m.registry.register("mallory", PRICE, 0, "x86_64 CPU", 4096));
    await send(m.usdc.mint(mallory.address, STAKE));
    await send(m.usdc.approve(d.registry, STAKE));
    await send(m.registry.depositStake(STAKE));
    const c = as(TEST_KEYS.client);
    const client = new Wallet(TEST_KEYS.client);
    await send(c.usdc.mint(client.address, 100_000n));
    await send(c.usdc.approve(d.escrow, 100_000n));
    const request = {
      templateId,
      totalSteps: 100,
      checkpointInterval: 10,
      maxPricePerStep: PRICE,
      budget: 100_000n,
      disputeWindow: 3_600n,
    };
    await send(c.escrow.createJob(request));
    await send(as(TEST_KEYS.coordinator).escrow.assign(1n, mallory.address));
    // Step 10 accepted (10 steps credited), step 20 refused with a fault at step 17 found by verifier3.
    const domain = escrowDomain(chainId, d.escrow);
    const verifiers = [new Wallet(TEST_KEYS.verifier1), new Wallet(TEST_KEYS.verifier2)];
    const keeper = as(TEST_KEYS.keeper).escrow;
    const h10 = id("slashed:10");
    await send(sendReport(m.escrow, 1n, 1n, 10, h10)); // as the agent sends it (test/agent/gasHeadroom.ts)
    const accept = { jobId: 1n, epoch: 1n, step: 10, checkpointHash: h10, accept: true };
    const acceptSigs = await safeSignatures(
      chainId,
      d.verifierSafe,
      checkpointDecisionDigest(domain, accept),
      verifiers,
    );
    await send(keeper.acceptCheckpoint(1n, 1n, 10, h10, acceptSigs));
    const h20 = id("slashed:20:fabricated");
    await send(sendReport(m.escrow, 1n, 1n, 20, h20));
    const fault = {
      step: 17,
      inputHash: id("state:16"),
      committedHash: id("state:17:committed"),
      replayedHash: id("state:17:replayed"),
      finder: finder.address,
    };
    const refusal = { jobId: 1n, epoch: 1n, step: 20, checkpointHash: h20, fault };
    const faultSigs = await safeSignatures(chainId, d.verifierSafe, faultRefusalDigest(domain, refusal), verifiers);
    // Relayed as the collector relays it (keepers/chain.ts): headroom over the estimate.
    const gas = withGasHeadroom(await keeper.refuseWithFault.estimateGas(1n, 1n, 20, h20, fault, faultSigs));
    const receipt = (await send(keeper.refuseWithFault(1n, 1n, 20, h20, fault, faultSigs, { gasLimit: gas }))) as {
      blockNumber: number;
    };
    slashBlock = receipt.blockNumber;
    slashTime = new Date((await chain.getBlock(slashBlock))!.timestamp * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
    // A second job mallory alone fits (nobody else is registered): job 1 fences it, this one does not.
    await send(c.usdc.mint(client.address, request.budget));
    await send(c.usdc.approve(d.escrow, request.budget));
    await send(c.escrow.createJob(request));
    deposit = async (amount) => {
      await send(m.usdc.mint(mallory.address, amount));
      await send(m.usdc.approve(d.registry, amount));
      await send(m.registry.depositStake(amount));
    };
  });

  after(async function () {
    chain?.destroy();
    await group.stopAll(3_000);
    rmSync(path.join("ignition", "deployments", deploymentId), { recursive: true, force: true });
  });

  it("explain says the provider was slashed: fault at step 17, found by verifier3 (its address)", async function () {
    const r = await runGpuchain(["explain", "1", "--rpc", rpc, "--deployment", file]);
    expect(r.code, r.stderr + r.stdout).to.equal(0);
    const by = `found by verifier3 \\(${finder.address}\\)`;
    expect(r.stdout).to.match(
      new RegExp(
        `^  mallory \\(${mallory.address.toLowerCase()}\\): 10 steps accepted, 1 refused, earned 0\\.000000 USDC ` +
          `\\(released 0\\.000000 USDC\\) — slashed: fault at step 17, ${by}; 1\\.000000 USDC of stake lost, ` +
          `unclaimed earnings voided$`,
        "mi",
      ),
    );
    expect(r.stdout).to.match(/slashed: fault at step 17, found by verifier3; 1\.000000 USDC of stake to the client/);
    expect(r.stdout).to.match(/rebuilt from events agrees with the contract's state/);
  });

  it("wallet shows the provider's stake after the slash and why it lost it", async function () {
    const r = await runGpuchain(["wallet", mallory.address, "--rpc", rpc, "--deployment", file]);
    expect(r.code, r.stderr + r.stdout).to.equal(0);
    expect(r.stdout.split("\n")[0], "named by its registered name").to.equal(`mallory (${mallory.address})`);
    const left = (STAKE - MIN_STAKE) / USDC;
    expect(r.stdout).to.match(
      new RegExp(
        `^  stake in the registry: held now ${left}\\.000000 USDC, locked 0\\.000000 USDC; ` +
          `slashed so far: 1\\.000000 USDC$`,
        "m",
      ),
    );
    expect(r.stdout).to.match(
      new RegExp(
        `^  job 1 as provider: 10 steps accepted, 1 refused — slashed: fault at step 17, found by verifier3 `,
        "m",
      ),
    );
  });

  it("explain (an Open job) and wallet say the slashed provider is not assigned until it re-stakes; a deposit lifts it", async function () {
    const line =
      `provider ${mallory.address}: slashed at block ${slashBlock} (${slashTime}) on job 1, ` +
      `not assigned until it re-stakes`;
    const explain = await runGpuchain(["explain", "2", "--rpc", rpc, "--deployment", file]);
    expect(explain.code, explain.stderr + explain.stdout).to.equal(0);
    expect(explain.stdout).to.contain(
      "waiting: no eligible provider: every active provider that fits was slashed and has not re-staked\n",
    );
    expect(explain.stdout).to.contain(`waiting: ${line}\n`);
    const wallet = await runGpuchain(["wallet", mallory.address, "--rpc", rpc, "--deployment", file]);
    expect(wallet.code, wallet.stderr + wallet.stdout).to.equal(0);
    expect(wallet.stdout).to.contain(`  ${line} (a stake deposit after the slash lifts it)\n`);
    // A client posting another job is told the same, not given price advice (the terms are not the problem).
    const clientKey = path.join(mkdtempSync(path.join(tmpdir(), "gpuchain-slashed-client-")), "client.key");
    writeKey(clientKey, TEST_KEYS.client);
    // (a dry run checks the budget's balance too: the client holds it, so the warning is the only thing said)
    const client = new Wallet(TEST_KEYS.client).address;
    const funded = await runGpuchain(["faucet", client, "--usdc", "1", "--rpc", rpc, "--deployment", file]);
    expect(funded.code, funded.stderr).to.equal(0);
    const create = await runGpuchain([
      ...["job", "create", "--template", "blobs-tiny", "--steps", "20", "--interval", "10"],
      ...["--max-price", "0.01", "--key", clientKey, "--dry-run", "--rpc", rpc, "--deployment", file],
    ]);
    expect(create.code, create.stderr + create.stdout).to.equal(0);
    expect(create.stderr).to.contain(`warning: no active provider can take this job: ${line}\n`);
    expect(create.stderr).to.not.contain("what would fit");
    // mallory deposits again: eligible again, and neither command says it waits any more.
    await deposit(MIN_STAKE);
    const after = await runGpuchain(["explain", "2", "--rpc", rpc, "--deployment", file]);
    expect(after.code, after.stderr + after.stdout).to.equal(0);
    expect(after.stdout).to.contain("waiting: for the coordinator to assign it (1 active provider(s) fit)\n");
    expect(after.stdout).to.not.contain("re-stake");
    const walletAfter = await runGpuchain(["wallet", mallory.address, "--rpc", rpc, "--deployment", file]);
    expect(walletAfter.stdout).to.not.contain("re-stake");
  });

  it("wallet shows the finder its bounty and the client its compensation, agreeing with the contract", async function () {
    const f = await runGpuchain(["wallet", finder.address, "--rpc", rpc, "--deployment", file]);
    expect(f.code, f.stderr + f.stdout).to.equal(0);
    expect(f.stdout).to.match(/^ {2}withdrawable now: 0\.200000 USDC$/m); // 20 % of the 1 USDC lock
    const c = await runGpuchain(["wallet", new Wallet(TEST_KEYS.client).address, "--rpc", rpc, "--deployment", file]);
    expect(c.code, c.stderr + c.stdout).to.equal(0);
    expect(c.stdout).to.match(/^ {2}withdrawable now: 0\.500000 USDC$/m); // 50 %
  });
});
