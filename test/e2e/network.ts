/**
 * End to end: the `npm start` scenario in a shorter configuration (the small synthetic template), with real
 * processes: a node, Ignition deployment, keepers, three verifiers, three provider agents — once on Hardhat's node
 * and once on anvil (npm `@foundry-rs/anvil`, a second, independent implementation that rejects log queries for
 * blocks past its head), each started and stopped by the scenario on a free port.
 */
import { expect } from "chai";
import path from "node:path";
import { runScenario, type ScenarioResult } from "../../demo/scenario.ts";
import { expectEveryPromiseKept, removeDeploymentAfter, SHORT_RUN } from "../helpers/scenario.ts";
import { runToEnd } from "../../demo/processes.ts";
import type { ChainNode } from "../../demo/types.ts";

for (const node of ["hardhat", "anvil"] as const satisfies ChainNode[]) describeScenario(node);

function describeScenario(node: ChainNode) {
  describe(`the whole network, end to end (short configuration, ${node})`, function () {
    this.timeout(600_000);
    const deploymentId = `e2e-${node}-${process.pid}`;
    const reservesAtEveryBlock: { block: number; held: bigint; owes: bigint }[] = [];
    let result: ScenarioResult;
    const lines: string[] = [];
    let explained: { code: number; output: string } | undefined;
    let walletOut: { code: number; output: string } | undefined;
    let state: { paid: bigint; epoch: bigint; alice?: string } | undefined;
    // On anvil the run also uses --keep: the network must still answer the CLI after the summary, until stopped.
    const keep = node === "anvil";
    const stop = new AbortController();
    let live: { rpc: string; deploymentFile: string } | undefined;
    let keptUp: Promise<{ code: number; output: string }> | undefined;
    let posted: { code: number; output: string } | undefined;
    const runDir = path.join(".gpuchain", `e2e-${node}-${process.pid}`);
    const print = (line: string) => {
      lines.push(line);
      if (keep && line.startsWith("the network stays up") && live && !keptUp) {
        const common = ["--rpc", live.rpc, "--deployment", live.deploymentFile];
        keptUp = (async () => {
          const reserves = await runToEnd(["cli/gpuchain.ts", "reserves", ...common]);
          // A job posted while kept is narrated like the first (and the run goes on until stopped).
          const key = path.join(runDir, "keys", "client.key");
          const create = ["job", "create", "--template", "blobs-tiny", "--steps", "10", "--max-price", "0.0015"];
          posted = await runToEnd(["cli/gpuchain.ts", ...create, ...common, "--key", key]);
          for (let i = 0; i < 240 && !lines.some((l) => /^\[chain\] job 2 assigned to /.test(l)); i++)
            await new Promise((r) => setTimeout(r, 250));
          return reserves;
        })().finally(() => stop.abort());
      }
    };

    before(async function () {
      result = await runScenario({
        ...SHORT_RUN,
        runDir,
        deploymentId,
        node,
        port: undefined,
        timeoutMs: 420_000,
        print,
        keep,
        signal: stop.signal,
        beforeStop: async ({ provider, protocol, jobId, rpc, deploymentFile }) => {
          live = { rpc, deploymentFile };
          // What an auditor runs: the job's history and a provider's wallet, rebuilt from events by the real CLI.
          const common = ["--rpc", rpc, "--deployment", deploymentFile];
          explained = await runToEnd(["cli/gpuchain.ts", "explain", String(jobId), "--json", ...common]);
          const job = await protocol.escrow.jobOf(jobId);
          const accepted = await protocol.escrow.queryFilter(protocol.escrow.filters.CheckpointAccepted(jobId));
          state = { paid: job.paid, epoch: job.epoch, alice: accepted[0]?.args.provider };
          if (state.alice) walletOut = await runToEnd(["cli/gpuchain.ts", "wallet", state.alice, ...common]);
          const head = await provider.getBlockNumber();
          const deployedAt = (await provider.getLogs({ address: await protocol.escrow.getAddress(), fromBlock: 0 }))[0]
            .blockNumber;
          for (let block = deployedAt; block <= head; block++) {
            const [held, owes] = await protocol.escrow.reserves({ blockTag: block });
            reservesAtEveryBlock.push({ block, held, owes });
          }
        },
      });
      if (!result.ok) console.log(lines.join("\n"));
    });

    removeDeploymentAfter(deploymentId);

    it("settles the job and keeps every promise", function () {
      expectEveryPromiseKept(result);
    });

    it("pays the faulty provider nothing for refused work", function () {
      expect(result.checks.find((c) => c.promise.startsWith("the faulty provider"))?.held).to.equal(true);
    });

    it("pays the killed provider exactly for its accepted steps and fails the job over", function () {
      expect(result.checks.find((c) => c.promise.startsWith("the killed provider"))?.held).to.equal(true);
      expect(result.failoverSeconds).to.be.a("number");
    });

    it("returns the unspent budget to the client", function () {
      expect(result.checks.find((c) => c.promise.startsWith("the client got"))?.held).to.equal(true);
    });

    it("holds proof of reserves at every block", function () {
      expect(reservesAtEveryBlock.length).to.be.greaterThan(10);
      for (const r of reservesAtEveryBlock) expect(r.held >= r.owes, `block ${r.block}`).to.equal(true);
    });

    it("explain reproduces the job's payments and epoch from events alone, agreeing with the contract", function () {
      expect(explained?.code, explained?.output).to.equal(0);
      const report = JSON.parse(explained!.output);
      expect(report.agreesWithContract).to.equal(true);
      expect(BigInt(report.paid)).to.equal(state!.paid);
      expect(BigInt(report.epoch)).to.equal(state!.epoch);
      const earned = report.providers.reduce((sum: bigint, p: { earned: string }) => sum + BigInt(p.earned), 0n);
      expect(earned).to.equal(state!.paid);
    });

    it("wallet agrees with the contract on what a provider is owed", function () {
      expect(walletOut?.code, walletOut?.output).to.equal(0);
      expect(walletOut!.output).to.contain("withdrawn so far");
    });

    it("ends with a final model that beats the job's target accuracy", function () {
      expect(result.checks.find((c) => c.promise.startsWith("the final model"))?.held).to.equal(true);
    });

    it("names each keeper in its log prefix and keeps the result last on screen", function () {
      for (const keeper of ["coordinator", "collector", "finalizer"])
        expect(lines.some((l) => l.startsWith(`[${keeper}] `))).to.equal(true);
      expect(lines.filter((l) => l.startsWith("[keepers] started"))).to.deep.equal([]);
      const stopped = lines.findIndex((l) => /^stopped the \d+ processes this run started$/.test(l));
      expect(stopped, "one shutdown line").to.be.greaterThan(0);
      const tail = lines.slice(stopped + 1);
      expect(tail.some((l) => l.startsWith("provider ") && l.includes("earned USDC"))).to.equal(true);
      expect(tail.at(-2)).to.equal("every promise held");
      expect(tail.filter((l) => l.startsWith("["))).to.deep.equal([]); // no child's line after the table
    });

    if (keep) {
      it("--keep leaves the network up after the settlement for the CLI, and says how to use it", async function () {
        const reserves = await keptUp!;
        expect(reserves.code, reserves.output).to.equal(0);
        expect(reserves.output).to.match(/^proof of reserves: HOLDS$/m);
        const howTo = lines.slice(lines.findIndex((l) => l.startsWith("the network stays up")));
        expect(howTo.some((l) => l.includes(`npx gpuchain explain ${result.jobId} --rpc http://127.0.0.1:`))).to.equal(
          true,
        );
        expect(howTo.some((l) => l.includes("npx gpuchain wallet alice "))).to.equal(true);
      });

      it("--keep narrates what happens after the summary: a second job posted, assigned", function () {
        expect(posted?.code, posted?.output).to.equal(0);
        const kept = lines.slice(lines.findIndex((l) => l.startsWith("what happens from here on")));
        // The one sentence per event (sdk/words/sentences.ts), as the dashboard's feed and explain say it.
        const posted2 =
          /^\[chain\] job 2 posted by \S+: 10 steps, checkpoint every \d+, at most \d+\.\d{6} USDC\/step, budget \d+\.\d{6} USDC locked$/;
        expect(kept.some((l) => posted2.test(l))).to.equal(true);
        expect(kept.some((l) => /^\[chain\] job 2 assigned to (alice|bob|mallory) \(epoch 1/.test(l))).to.equal(true);
      });
    }

    it("reports reserves over the whole run and lost work consistent with the chain", function () {
      const reserves = result.checks.find((c) => c.promise.startsWith("proof of reserves"))!;
      expect(reserves.detail).to.match(/^\d+ blocks, smallest margin held − owed \d+\.\d{6} USDC/);
      expect(result.minReserveMargin! >= 0n).to.equal(true);
      const failover = lines.find((l) => l.startsWith("failover: "))!;
      const m = /work lost: (\d+) steps \(alice trained to step (\d+).*resumed from step (\d+)/.exec(failover);
      expect(m, failover).to.not.equal(null);
      expect(Number(m![1])).to.equal(Math.max(0, Number(m![2]) - Number(m![3])));
      expect(result.lostSteps).to.equal(Number(m![1]));
    });
  });
}
