/**
 * Issue 19, "(high) The lazy provider is paid for an interval it never trained": cheating never pays against the
 * deployed verifiers. The Monte Carlo drives the real sampler (workloads/segments.ts) over every strategy at
 * intervals 10 … 1,000; the lazy provider is then verified for real (onnxruntime replays) at 100, 500 and 1,000.
 * Before the fix a verifier replayed a pool segment only with probability k/m (4 % at interval 1,000): 21 of 24 lazy
 * checkpoints were accepted there, and the simulation's worst expected value was +0.77 USDC per checkpoint.
 */
import { expect } from "chai";
import { lazyPaidPct } from "../../bench/cheat.ts";
import { DEPLOYMENT, simulateCheats, randomSalt } from "../../verifier/economics.ts";
import { loadTemplate } from "../../workloads/index.ts";
import { mulberry32 } from "../helpers/random.ts";
import { useScratch } from "../helpers/scratch.ts";
import { checkerFor, firstJob, Provider } from "../verifier/helpers.ts";

describe("adversary: fabricating steps never pays against the deployed verifiers", function () {
  const template = loadTemplate("blobs-tiny");
  const scratch = useScratch("gpuchain-adversary-cheat-", template);

  it("every strategy (scattered, clustered, lazy, lazy with a trained prefix) at 10 … 1,000 steps has EV < 0", function () {
    const { rows, worst } = simulateCheats(300, mulberry32(1913));
    expect(rows.length).to.be.above(50);
    for (const r of rows) {
      const what = `${r.strategy} f=${r.fabricated} at ${r.interval}: caught ${r.caught}`;
      expect(r.ev, what).to.be.below(0);
      expect(r.evOneColluding, `${what} (one verifier colluding)`).to.be.below(0);
      if (r.strategy === "lazy") expect(r.caught, what).to.equal(1);
    }
    expect(Math.max(worst.ev, worst.evOneColluding)).to.be.below(0);
  });

  for (const n of [100, 500, 1000]) {
    it(`a lazy provider at interval ${n} is refused by every verifier (replay-mismatch), never paid`, async function () {
      const { paidPct, refusedCodes } = await lazyPaidPct(
        template,
        scratch.trainer,
        scratch.store,
        n,
        8,
        mulberry32(n + 7),
      );
      expect(paidPct).to.equal(0);
      expect([...refusedCodes]).to.deep.equal(["replay-mismatch"]);
    });
  }

  it("control: honest work at interval 500 is accepted by every verifier", async function () {
    const provider = new Provider(scratch.trainer, scratch.store, "0x" + "5a".repeat(20));
    const job = firstJob(template, randomSalt(mulberry32(5)));
    const { report } = await provider.produce(job, 500, "honest");
    const check = checkerFor(scratch.trainer, scratch.store, DEPLOYMENT.samples);
    const rand = mulberry32(6);
    for (let v = 0; v < DEPLOYMENT.verifiers; v++) {
      const verdict = await check(job, report, randomSalt(rand));
      expect(verdict.accept, verdict.reasons.join("; ")).to.equal(true);
      expect(verdict.metrics.replayedSteps).to.equal(25 + 1); // one pool segment of 500/20 and the last step
    }
  });
});
