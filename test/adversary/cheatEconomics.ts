/**
 * Fabricating steps never pays against the deployed verifiers, per checkpoint and per whole job. The Monte Carlo
 * (verifier/economics.ts) drives the real sampler (workloads/segments.ts) over every strategy — scattered,
 * clustered, lazy, copied, and an honest prefix with the rest copied as it is (the finding), relabelled, poisoned or
 * hidden behind unreadable blobs — with the segment length the provider chooses, three honest verifiers and one of
 * them colluding, the probation forfeit and the fence, at intervals 10 … 1,000. The lazy provider and the finding's
 * prefix-then-copy provider are then verified for real (onnxruntime replays, claim re-checks).
 * Before: the lazy provider was paid for 21 of 24 checkpoints at interval 1,000 (a verifier replayed a pool segment
 * only with probability k/m); later, prefix-then-copy with m = 4 was paid for 84 % of checkpoints at interval 1,000
 * with 25 % copied (a mislabelled state was a plain refusal, 2 of 3 had to find it), EV +0.08 USDC per checkpoint.
 */
import { expect } from "chai";
import { copyOutcomes, lazyPaidPct } from "../../bench/cheat.ts";
import {
  COPY_STRATEGIES,
  DEPLOYMENT,
  INTERVALS,
  partialFabrication,
  randomSalt,
  simulateCheats,
} from "../../verifier/economics.ts";
import { defaultSegmentSteps, loadTemplate } from "../../workloads/index.ts";
import { mulberry32 } from "../helpers/random.ts";
import { useScratch } from "../helpers/scratch.ts";
import { checkerFor, firstJob, Provider } from "../verifier/helpers.ts";

describe("adversary: fabricating steps never pays against the deployed verifiers", function () {
  this.timeout(300_000);
  const template = loadTemplate("blobs-tiny");
  const scratch = useScratch("gpuchain-adversary-cheat-", template);

  it("every strategy at every provider-chosen m, at 10 … 1,000 steps, has EV < 0 per checkpoint and per job (3 honest, 1 colluding)", function () {
    const { rows, worst, worstJob } = simulateCheats(300, mulberry32(1913));
    const names = new Set(rows.map((r) => r.strategy));
    expect([...names].sort()).to.deep.equal(
      ["clustered", "copied", "hidden", "lazy", "poisoned", "prefix-copy", "relabelled", "scattered"].sort(),
    );
    expect(new Set(rows.map((r) => r.interval))).to.deep.equal(new Set(INTERVALS));
    for (const r of rows) {
      const what = `${r.strategy} m=${r.segmentSteps} f=${r.fabricated} at ${r.interval}`;
      expect(r.ev, what).to.be.below(0);
      expect(r.evOneColluding, `${what} (one verifier colluding)`).to.be.below(0);
      expect(r.evJob, `${what} (per job)`).to.be.below(0);
      expect(r.evJobOneColluding, `${what} (per job, one colluding)`).to.be.below(0);
      if (r.segmentSteps !== defaultSegmentSteps(r.interval)) expect(r.oneColluding.refused, what).to.equal(1);
      else if (r.strategy === "lazy" || r.strategy === "copied") expect(r.oneColluding.slashed, what).to.equal(1);
    }
    expect(Math.max(worst.ev, worst.evOneColluding)).to.be.below(0);
    expect(Math.max(worstJob.evJob, worstJob.evJobOneColluding)).to.be.below(0);
  });

  it("the finding's partial fabrication (25 % and 50 % copied) is never paid at 100, 500, 1,000 (simulated): always slashed", function () {
    for (const n of [100, 500, 1000])
      for (const share of [0.25, 0.5]) {
        const o = partialFabrication(n, share, 1000, mulberry32(n));
        for (const x of [o.honest, o.oneColluding])
          expect(x, `${n} at ${share}`).to.deep.equal({ paid: 0, slashed: 1, refused: 0 });
      }
  });

  it("its well-formed variants are paid only when no sample reaches a copied span, and lose (relabelled: slashed; hidden: refused)", function () {
    for (const name of COPY_STRATEGIES.filter((s) => s !== "prefix-copy" && s !== "poisoned"))
      for (const share of [0.25, 0.5]) {
        const o = partialFabrication(1000, share, 1000, mulberry32(share * 100), name);
        if (name === "hidden") expect(o.oneColluding.paid, name).to.equal(0);
        // Not chai's closeTo: under the whole suite Hardhat's matchers take it for bigints.
        else expect(Math.abs(o.oneColluding.slashed + o.oneColluding.paid - 1) < 1e-9, name).to.equal(true);
      }
  });

  for (const n of [100, 500, 1000]) {
    it(`prefix-then-copy at interval ${n}, 25 % and 50 % copied, verified for real: never paid, every one slashed`, async function () {
      for (const share of [0.25, 0.5]) {
        const rand = mulberry32(n * 10 + share * 100);
        const o = await copyOutcomes(scratch.trainer, scratch.store, n, share, "prefix-copy", 3, rand);
        expect(o.honest, `3 honest, ${share}`).to.deep.equal({ paid: 0, slashed: 1, refused: 0 });
        expect(o.oneColluding, `1 colluding, ${share}`).to.deep.equal({ paid: 0, slashed: 1, refused: 0 });
      }
    });
  }

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
