/**
 * The stake economics inequality (docs/ARCHITECTURE.md, "Stake and slashing"): fabricating steps does not pay
 * when, for every number f of fabricated steps in one checkpoint of I steps,
 *
 *     q(f) · S  ≥  (1 − q(f)) · f · price
 *
 * S is the lock the job takes, max(minStake, price × I); f · price bounds what skipping f steps saves (a step is
 * never worth more to a provider than it is paid); q(f) is the chance that the verifiers refuse the checkpoint
 * with a proven fault. Each verifier replays k = `samples` steps drawn uniformly from the I (plus the last, which
 * a cheater therefore never fakes), so it catches f bad steps with c(f) = 1 − C(I−f, k)/C(I, k), independently of
 * the others (secret per-verifier salts). With today's 2-of-3 quorum q = P(at least 2 of 3 catch); with fault
 * claims (one honest catch re-checked by the others, issue 13 item 2) q = 1 − (1 − c)³.
 *
 * The test checks the deployment defaults: Ignition's minStake (1 USDC), the verifier's default samples, at the
 * prices and intervals `npm start` uses (max price 0.0015 USDC per step; interval 100, or 20 with --quick).
 */
import { expect } from "chai";
import { readFileSync } from "node:fs";
import { DEFAULT_CONFIG } from "../../verifier/verifier.ts";
import { detectionProbability } from "../../workloads/replay.ts";
import * as fx from "../helpers/fixture.ts";

const DEMO_MAX_PRICE = 1_500n; // demo/scenario.ts MAX_PRICE: 0.0015 USDC per step, in base units
const DEMO_INTERVALS = [20, 100]; // scripts/start.ts: --quick and default

type Quorum = "2-of-3" | "any-of-3";

function refusalProbability(interval: number, samples: number, fabricated: number, quorum: Quorum): number {
  const c = detectionProbability(interval, samples, fabricated);
  return quorum === "any-of-3" ? 1 - (1 - c) ** 3 : 3 * c * c * (1 - c) + c ** 3;
}

/** The largest stake-to-price ratio fabrication can need at this interval: max over f of f(1 − q)/q. */
function requiredStakeOverPrice(interval: number, samples: number, quorum: Quorum): number {
  let worst = 0;
  for (let f = 1; f < interval; f++) {
    const q = refusalProbability(interval, samples, f, quorum);
    worst = Math.max(worst, q === 0 ? Infinity : (f * (1 - q)) / q);
  }
  return worst;
}

const lockFor = (minStake: bigint, price: bigint, interval: number) => {
  const perCheckpoint = price * BigInt(interval);
  return perCheckpoint > minStake ? perCheckpoint : minStake;
};

describe("economics: fabricating steps does not pay at the deployment defaults", function () {
  it("the deployed minimum stake is Ignition's default and the local parameter file's", async function () {
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    expect(await p.registry.minStake()).to.equal(fx.MIN_STAKE);
    const local = JSON.parse(readFileSync(new URL("../../ignition/parameters/local.json", import.meta.url), "utf8"));
    expect(BigInt(String(local.GPUChainLocal.minStake).replace(/n$/, ""))).to.equal(fx.MIN_STAKE);
  });

  it(`today's 2-of-3 quorum: S = max(1 USDC, price × I) meets the inequality at the demo's prices and intervals (samples ${DEFAULT_CONFIG.samples})`, function () {
    for (const interval of DEMO_INTERVALS) {
      for (const price of [1n, 800n, 1_000n, DEMO_MAX_PRICE]) {
        const ratio = Number(lockFor(fx.MIN_STAKE, price, interval)) / Number(price);
        const needed = requiredStakeOverPrice(interval, DEFAULT_CONFIG.samples, "2-of-3");
        expect(ratio, `interval ${interval}, price ${price}: S/price ${ratio} < ${needed.toFixed(1)}`).to.be.at.least(
          needed,
        );
      }
    }
  });

  it("with fault claims (any one verifier's catch suffices) the per-checkpoint lock alone meets it at every interval", function () {
    for (let interval = 2; interval <= 1_000; interval += interval < 50 ? 1 : 37) {
      const needed = requiredStakeOverPrice(interval, DEFAULT_CONFIG.samples, "any-of-3");
      // S ≥ price × I, so S/price ≥ I.
      expect(interval, `interval ${interval} needs S/price ≥ ${needed.toFixed(1)}`).to.be.at.least(needed);
    }
  });

  it("the inequality can fail: 2-of-3 with the lock alone (no minimum) at interval 100 does not deter one fabricated step", function () {
    // A check that can fail: without the network minimum, S/price = 100 < what 2-of-3 needs at interval 100.
    expect(requiredStakeOverPrice(100, DEFAULT_CONFIG.samples, "2-of-3")).to.be.greaterThan(100);
  });
});
