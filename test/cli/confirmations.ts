/**
 * The one-shot readers (`gpuchain explain`, `gpuchain wallet`) on a real anvil node: they read the events and the
 * contract's state at one block, and mark the events above the confirmed block (head − depth) as not final yet. The
 * confirmation-depth rule at depth 2 for an event mined at block t: marked with the head at t and t + 1, final at
 * t + 2; on a local chain (depth 0 by default) never marked.
 */
import { expect } from "chai";
import { Wallet } from "ethers";
import { TEST_KEYS } from "../../demo/chain.ts";
import { anvilProtocol, mine, type AnvilProtocol } from "../helpers/anvilChain.ts";
import { runGpuchain } from "../helpers/cli.ts";

describe("cli: explain and wallet mark what is not final yet (anvil)", function () {
  this.timeout(180_000);
  let p: AnvilProtocol;

  before(async function () {
    p = await anvilProtocol("cli-confirmations");
  });
  after(async () => p?.stop());

  const common = () => ["--rpc", p.rpc, "--deployment", p.deploymentFile];
  const explain = (jobId: bigint, env: Record<string, string> = {}) =>
    runGpuchain(["explain", jobId.toString(), ...common()], env);

  it("at depth 2 an event of block t is unconfirmed with the head at t and t + 1, final at t + 2", async function () {
    const jobId = await p.createJob(8, 4);
    const t = await p.chain.getBlockNumber();
    const deep = { GPUCHAIN_CONFIRMATIONS: "2" };
    const marked: boolean[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await explain(jobId, deep);
      expect(r.code, r.stderr).to.equal(0);
      marked.push(r.stdout.includes("unconfirmed: 1 of these events"));
      if (i < 2) await mine(p.chain, 1);
    }
    expect(marked, "head t, t + 1, t + 2").to.deep.equal([true, true, false]);
    const json = JSON.parse((await runGpuchain(["explain", jobId.toString(), "--json", ...common()], deep)).stdout);
    expect(json.read).to.deep.equal({ block: t + 2, confirmedBlock: t });
  });

  it("on a local chain (depth 0) nothing is marked; wallet marks at depth 2 too", async function () {
    const jobId = await p.createJob(8, 4);
    const local = await explain(jobId);
    expect(local.code, local.stderr).to.equal(0);
    expect(local.stdout).to.not.contain("unconfirmed");
    const client = new Wallet(TEST_KEYS.client).address;
    const w = await runGpuchain(["wallet", client, ...common()], { GPUCHAIN_CONFIRMATIONS: "2" });
    expect(w.code, w.stderr).to.equal(0);
    expect(w.stdout).to.match(/unconfirmed: \d+ of these events/);
  });
});
