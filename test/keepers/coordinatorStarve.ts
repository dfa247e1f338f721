/**
 * No starving, the pure rules: liveness means progress (the step and report bounds at
 * bound−1, bound, bound+1 ms), an idle hold keeps a provider off that job and backs it off across jobs
 * (exponential, capped), a track record wins within the stated price margin, and the chain facts behind them
 * rebuilt from escrow events (trackRecord.ts).
 */
import { expect } from "chai";
import { getAddress } from "ethers";
import {
  AHEAD_INTERVALS,
  BACKOFF_DEFAULTS,
  backoffSeconds,
  DECISION_TIMEOUT_S,
  decideRunning,
  expectedStepMs,
  jobBeatKey,
  jobEpochKey,
  planCoordinator,
  progressBounds,
  PROGRESS,
  TRACK_RECORD_MARGIN_PCT,
  type CoordinatorJob,
  type CoordinatorView,
  type ProviderView,
  type StepSeen,
  type TrackRecord,
} from "../../keepers/coordinator/decide.ts";
import { macsPerStep, microBatches, templateStepMs } from "../../keepers/coordinator/stepTime.ts";
import { TrackRecords } from "../../keepers/coordinator/trackRecord.ts";
import { UnassignReason } from "../../sdk/rules/ledger.ts";
import { loadTemplate } from "../../workloads/index.ts";
import { openJob } from "../helpers/jobs.ts";

const NOW = 10_000_000;
const CHAIN = 1_000_000n; // chain time, s
const T = 5_000; // heartbeat timeout
const GRACE = 20_000;
const STEP_MS = 1; // expected step time in these tables: the floor decides both bounds
const addr = (n: number) => getAddress("0x" + n.toString(16).padStart(40, "0"));
const P = addr(7);
const key = jobBeatKey(1n, 3n, P);

const provider = (n: number, over: Partial<ProviderView> = {}): ProviderView => ({
  address: addr(n),
  pricePerStep: 100n,
  memoryMiB: 1024,
  active: true,
  registered: true,
  ...over,
});

/** A Running 100-step job (interval 10, 10 accepted) held by P since `startMs` (assigned at that chain time). */
const running = (over: Partial<CoordinatorJob> = {}): CoordinatorJob =>
  openJob({
    status: "Running",
    epoch: 3n,
    provider: P,
    leaseExpiresAt: CHAIN + 100n,
    acceptedStep: 10,
    lastProgressAt: CHAIN - 3_600n, // long ago: the coordinator's own first sight is the later start
    ...over,
  });

function view(nowMs: number, over: Partial<CoordinatorView> = {}, steps: [string, StepSeen][] = []): CoordinatorView {
  return {
    nowMs,
    chainTime: CHAIN,
    timeoutMs: T,
    startGraceMs: GRACE,
    isCoordinator: true,
    jobs: [],
    providers: [provider(7)],
    lastBeat: new Map(),
    // The holder beat just now: the silence rule keeps it; only progress decides.
    lastJobBeat: new Map([[key, nowMs]]),
    watchStart: new Map([[jobEpochKey(1n, 3n), NOW]]),
    fenced: new Map(),
    memoryNeedMiB: () => 0,
    expectedStepMs: () => STEP_MS,
    jobSteps: new Map(steps),
    ...over,
  };
}

const FLOOR = PROGRESS.FLOOR_MS;
const REPORT = FLOOR; // 20 × interval 10 × 1 ms = 200 ms < floor

describe("keepers: coordinator no-starving rules (pure)", function () {
  describe("liveness means progress", function () {
    it("the bounds: max(floor, 20 × expected step) and max(floor, 20 × interval × expected step)", function () {
      expect(progressBounds(1, 10)).to.deep.equal({ stepMs: FLOOR, reportMs: FLOOR });
      expect(progressBounds(1_000, 10)).to.deep.equal({ stepMs: 20_000, reportMs: 200_000 });
      expect(progressBounds(600, 1, 1)).to.deep.equal({ stepMs: 12_000, reportMs: 12_000 });
      expect(expectedStepMs(1_000_000, 4)).to.equal(10 + 4 * PROGRESS.MICRO_BATCH_MS);
    });

    it("a holder beating without step progress: kept at start + grace + floor − 1 and at the bound, unassigned at +1", function () {
      const bound = NOW + GRACE + FLOOR;
      for (const [t, action] of [
        [bound - 1, "keep"],
        [bound, "keep"],
        [bound + 1, "unassign"],
      ] as const) {
        const d = decideRunning(running(), view(t, {}, [[key, { step: 10, at: NOW }]]));
        expect(d.action, `at bound${t - bound}`).to.equal(action);
      }
      const d = decideRunning(running(), view(bound + 1));
      expect(d.reason).to.equal(
        `no step progress for (job 1, epoch 3) in ${GRACE + FLOOR + 1} ms > ${GRACE + FLOOR} ms`,
      );
    });

    it("after step progress the grace is spent: the floor runs from the beat that first showed the highest step", function () {
      const at = NOW + 3_000;
      const steps: [string, StepSeen][] = [[key, { step: 14, at }]];
      expect(decideRunning(running(), view(at + FLOOR - 1, {}, steps)).action).to.equal("keep");
      expect(decideRunning(running(), view(at + FLOOR, {}, steps)).action).to.equal("keep");
      const d = decideRunning(running(), view(at + FLOOR + 1, {}, steps));
      expect([d.action, d.reason]).to.deep.equal([
        "unassign",
        `no step progress for (job 1, epoch 3) in ${FLOOR + 1} ms > ${FLOOR} ms`,
      ]);
    });

    it("a step claimed beyond three intervals past the latest checkpoint proves nothing (no agent trains so far ahead)", function () {
      const t = NOW + GRACE + FLOOR + 1;
      const at = t - 1_000; // shown a second ago
      // 100 ms steps: the report bound (20 × 10 × 100 ms = 20 s, + grace) is not reached yet at t.
      const slow = (step: number) => view(t, { expectedStepMs: () => 100 }, [[key, { step, at }]]);
      // acceptedStep 10, interval 10: step 40 counts (AHEAD_INTERVALS 3), 41 does not.
      expect(AHEAD_INTERVALS).to.equal(3);
      expect(decideRunning(running(), slow(40)).action).to.equal("keep");
      expect(decideRunning(running(), slow(41)).action).to.equal("unassign");
      // With a checkpoint at 20 pending but lapsed, up to 50 counts.
      const lapsed = running({ pendingStep: 20, reportedAt: CHAIN - DECISION_TIMEOUT_S - 1n });
      expect(decideRunning(lapsed, slow(50)).action).to.equal("keep");
      expect(decideRunning(lapsed, slow(51)).action).to.equal("unassign");
    });

    it("the report bound: a holder whose beats climb but never reports is unassigned at reportMs + grace + 1", function () {
      // Steps keep rising (a liar can claim them), yet no report lands on chain.
      const bound = NOW + GRACE + REPORT;
      const steps = (t: number): [string, StepSeen][] => [[key, { step: 15, at: t - 1 }]];
      expect(decideRunning(running(), view(bound - 1, {}, steps(bound - 1))).action).to.equal("keep");
      expect(decideRunning(running(), view(bound, {}, steps(bound))).action).to.equal("keep");
      const d = decideRunning(running(), view(bound + 1, {}, steps(bound + 1)));
      expect([d.action, d.reason]).to.deep.equal([
        "unassign",
        `no report for (job 1, epoch 3) in ${GRACE + REPORT + 1} ms > ${GRACE + REPORT} ms`,
      ]);
    });

    it("a report or an acceptance on chain (lastProgressAt) is progress: both bounds run from it", function () {
      const t = NOW + GRACE + FLOOR + 1; // past both bounds counted from the start
      const reportedAgo = (s: bigint) => running({ lastProgressAt: CHAIN - s });
      // On the coordinator's clock the chain's progress was at t − 1 s: the step bound runs from there (+ grace,
      // as no beat showed a step yet).
      expect(decideRunning(reportedAgo(1n), view(t)).action).to.equal("keep");
      const limit = GRACE + FLOOR;
      expect(decideRunning(reportedAgo(BigInt(limit / 1_000)), view(t)).action).to.equal("keep");
      expect(decideRunning(reportedAgo(BigInt(limit / 1_000) + 1n), view(t)).action).to.equal("unassign");
    });

    it("not while a checkpoint is decidable (waiting for the verifiers, as on chain); again once it lapsed", function () {
      const t = NOW + GRACE + FLOOR + 1;
      const pending = (reportedAt: bigint) => running({ pendingStep: 20, reportedAt });
      expect(decideRunning(pending(CHAIN - DECISION_TIMEOUT_S), view(t)).action).to.equal("keep");
      expect(decideRunning(pending(CHAIN - DECISION_TIMEOUT_S - 1n), view(t)).action).to.equal("unassign");
    });

    it("no progress rule for a template this node does not know, nor without a view of step times", function () {
      const t = NOW + 10 * (GRACE + FLOOR);
      expect(decideRunning(running(), view(t, { expectedStepMs: () => undefined })).action).to.equal("keep");
      expect(decideRunning(running(), view(t, { expectedStepMs: undefined })).action).to.equal("keep");
    });

    it("silence still decides first: a holder with progress that stops beating is unassigned at the timeout", function () {
      const t = NOW + T + 1;
      const d = decideRunning(running(), view(t, { lastJobBeat: new Map([[key, NOW]]) }));
      expect([d.action, d.reason]).to.deep.equal([
        "unassign",
        `no heartbeat for (job 1, epoch 3) in ${T + 1} ms > ${T} ms`,
      ]);
    });

    it("the expected step time of the real templates: MACs, micro-batches on the device's memory", function () {
      this.timeout(120_000); // the first loadTemplate builds every template's graphs: seconds on a busy machine
      const mnist = loadTemplate("mnist-mlp");
      expect(macsPerStep(mnist)).to.equal(3 * 64 * (784 * 64 + 64 * 10));
      expect(microBatches(mnist, 4096)).to.equal(1);
      expect(microBatches(mnist, 0)).to.equal(mnist.atomsPerStep);
      const full = templateStepMs(mnist.templateId, 4096)!;
      expect(full).to.equal(9_756_672 / 100_000 + 2); // (not closeTo: hardhat's chai matchers take it for bigints)
      expect(templateStepMs(mnist.templateId, 0)).to.equal(9_756_672 / 100_000 + 2 * 8);
      expect(progressBounds(full, 100)).to.deep.equal({ stepMs: FLOOR, reportMs: 199_134 });
      expect(templateStepMs("0x" + "ab".repeat(32), 4096)).to.equal(undefined);
    });
  });

  describe("an idle hold: not that job again, and a back-off across jobs", function () {
    const open = openJob({ jobId: 1n, templateId: "0x" + "00".repeat(32) });
    const idleBeat = { receivedAt: NOW, jobId: "0", epoch: "0" };
    const assignView = (
      over: Partial<CoordinatorView>,
      providers = [provider(1), provider(2, { pricePerStep: 200n })],
    ) =>
      view(NOW, {
        jobs: [open],
        providers,
        lastBeat: new Map(providers.map((p) => [p.address.toLowerCase(), idleBeat])),
        ...over,
      });
    const pick = (v: CoordinatorView) => planCoordinator(v).find((d) => d.jobId === 1n)!;
    const struck = (strikes: number, lastStrikeAt: bigint): Map<string, TrackRecord> =>
      new Map([[addr(1).toLowerCase(), { acceptedSteps: 0, strikes: strikes, lastStrikeAt }]]);

    it("a provider unassigned idle from a job is never handed it again (another job: only the back-off)", function () {
      const idleOn = new Map([["1", new Set([addr(1).toLowerCase()])]]);
      expect(pick(assignView({ idleOn })).provider).to.equal(addr(2));
      const d = pick(assignView({ idleOn }, [provider(1)]));
      expect([d.action, d.reason]).to.deep.equal(["wait", "no eligible provider (unassigned idle from this job ×1)"]);
      expect(pick(assignView({ idleOn: new Map([["2", new Set([addr(1).toLowerCase()])]]) })).provider).to.equal(
        addr(1),
      );
    });

    it("the back-off: base × 2^(n−1), capped; eligible again at exactly lastStrikeAt + that (t−1 still waits)", function () {
      expect([1, 2, 3, 6, 7, 100].map((n) => backoffSeconds(n))).to.deep.equal([60, 120, 240, 1_920, 3_600, 3_600]);
      expect(BACKOFF_DEFAULTS).to.deep.equal({ baseS: 60, capS: 3_600 });
      for (const [strikes, wait] of [
        [1, 60n],
        [3, 240n],
        [9, 3_600n],
      ] as const) {
        const at = (chainTime: bigint) => pick(assignView({ chainTime, records: struck(strikes, CHAIN - wait) }));
        expect(at(CHAIN - 1n).provider, `${strikes} strikes, t−1`).to.equal(addr(2));
        expect(at(CHAIN).provider, `${strikes} strikes, t`).to.equal(addr(1));
        expect(at(CHAIN + 1n).provider, `${strikes} strikes, t+1`).to.equal(addr(1));
      }
      const d = pick(assignView({ records: struck(1, CHAIN) }, [provider(1)]));
      expect(d.reason).to.equal("no eligible provider (backing off after idle holds ×1)");
    });

    it("a configured back-off replaces the default one", function () {
      const v = assignView({ records: struck(2, CHAIN - 10n), backoff: { baseS: 5, capS: 8 } });
      expect(pick(v).provider).to.equal(addr(1)); // min(8, 5 × 2) = 8 s ≤ 10 s ago
      expect(pick({ ...v, backoff: { baseS: 6, capS: 100 } }).provider).to.equal(addr(2)); // 12 s > 10 s
    });
  });

  describe("a track record wins within the stated price margin", function () {
    const proven = (n: number, price: bigint) => provider(n, { pricePerStep: price });
    const records = (n: number): Map<string, TrackRecord> =>
      new Map([[addr(n).toLowerCase(), { acceptedSteps: 40, strikes: 0, lastStrikeAt: 0n }]]);
    const pick = (providers: ProviderView[], recs?: Map<string, TrackRecord>) =>
      planCoordinator(
        view(NOW, {
          jobs: [openJob({ jobId: 1n })],
          providers,
          records: recs,
          lastBeat: new Map(
            providers.map((p) => [p.address.toLowerCase(), { receivedAt: NOW, jobId: "0", epoch: "0" }]),
          ),
        }),
      ).find((d) => d.jobId === 1n)!;

    it(`a provider with accepted steps asking up to ${TRACK_RECORD_MARGIN_PCT} % more wins; a cent more loses`, function () {
      const newcomer = proven(1, 100n); // lowest address, cheapest, no record
      expect(pick([newcomer, proven(2, 110n)], records(2)).provider).to.equal(addr(2));
      expect(pick([newcomer, proven(2, 109n)], records(2)).provider).to.equal(addr(2));
      expect(pick([newcomer, proven(2, 111n)], records(2)).provider).to.equal(addr(1));
      // Without the record the price alone decides, as before.
      expect(pick([newcomer, proven(2, 101n)]).provider).to.equal(addr(1));
      const d = pick([newcomer, proven(2, 110n)], records(2));
      expect(d.reason).to.equal(
        "cheapest eligible of 2 (0.000110 USDC/step, 1024 MiB, track record 40 accepted steps)",
      );
    });

    it("the same pick in every listing order (a total order: two coordinators agree)", function () {
      const ps = [proven(1, 100n), proven(2, 110n), proven(3, 110n), proven(4, 90n)];
      const recs = new Map([...records(2), ...records(3)]);
      const picks = [ps, [...ps].reverse(), [ps[2], ps[0], ps[3], ps[1]]].map((l) => pick(l, recs).provider);
      expect(picks).to.deep.equal([addr(4), addr(4), addr(4)]); // 90 × 1.1 = 99 ≤ 110: the newcomer undercuts
      const close = [proven(1, 101n), proven(2, 110n), proven(3, 110n)];
      const again = [close, [...close].reverse()].map((l) => pick(l, recs).provider);
      expect(again).to.deep.equal([addr(2), addr(2)]); // both proven at 110: lowest address
    });
  });

  describe("the Sybil bound: a job held idle goes to proven providers first", function () {
    const rec = (acceptedSteps: number, strikes = 0): TrackRecord => ({
      acceptedSteps,
      strikes,
      lastStrikeAt: 0n, // long ago: no back-off in these tables
    });
    const at = (n: number, price: bigint) => provider(n, { pricePerStep: price });
    const pick = (providers: ProviderView[], records: [number, TrackRecord][], idleBy: number[] = []) =>
      planCoordinator(
        view(NOW, {
          jobs: [openJob({ jobId: 1n })],
          providers,
          records: new Map(records.map(([n, r]) => [addr(n).toLowerCase(), r])),
          idleOn: idleBy.length ? new Map([["1", new Set(idleBy.map((n) => addr(n).toLowerCase()))]]) : undefined,
          lastBeat: new Map(
            providers.map((p) => [p.address.toLowerCase(), { receivedAt: NOW, jobId: "0", epoch: "0" }]),
          ),
        }),
      ).find((d) => d.jobId === 1n)!;

    it("never held idle: price decides (a newcomer at 1 beats a proven provider at 100)", function () {
      expect(pick([at(1, 1n), at(2, 100n)], [[2, rec(40)]]).provider).to.equal(addr(1));
    });

    it("held idle once: the proven provider takes it over every cheaper identity, and says why", function () {
      const idle = [at(3, 1n), at(4, 1n), at(5, 1n)];
      const d = pick([...idle, at(2, 100n)], [[2, rec(40)]], [9]);
      expect(d.provider).to.equal(addr(2));
      expect(d.reason).to.equal(
        "held idle before: cheapest proven eligible of 4 (0.000100 USDC/step, 1024 MiB, track record 40 accepted steps)",
      );
    });

    it("among proven providers the usual order holds: the cheaper one first", function () {
      expect(
        pick(
          [at(1, 1n), at(2, 100n), at(3, 90n)],
          [
            [2, rec(40)],
            [3, rec(10)],
          ],
          [9],
        ).provider,
      ).to.equal(addr(3));
    });

    it("a record with an idle hold since its last accepted checkpoint is not proven", function () {
      // addr(2) has accepted steps but idled since: it ranks by price like any newcomer.
      expect(pick([at(1, 1n), at(2, 100n)], [[2, rec(40, 1)]], [9]).provider).to.equal(addr(1));
    });

    it("a job whose hold ended in junk (reported, refused or lapsed: struck, not idle) also goes to proven providers first", function () {
      const d = planCoordinator(
        view(NOW, {
          jobs: [openJob({ jobId: 1n })],
          providers: [at(1, 1n), at(2, 100n)],
          records: new Map([[addr(2).toLowerCase(), rec(40)]]),
          struckOn: new Map([["1", new Set([addr(9).toLowerCase()])]]),
          lastBeat: new Map(
            [at(1, 1n), at(2, 100n)].map((p) => [p.address.toLowerCase(), { receivedAt: NOW, jobId: "0", epoch: "0" }]),
          ),
        }),
      ).find((x) => x.jobId === 1n)!;
      expect(d.provider).to.equal(addr(2));
    });

    it("no proven provider fits: the job still goes to the cheapest eligible (no one starves it)", function () {
      expect(pick([at(1, 1n), at(2, 100n)], [], [9]).provider).to.equal(addr(1));
      const d = pick([at(1, 1n), at(2, 100n)], [], [9]);
      expect(d.reason).to.equal("cheapest eligible of 2 (0.000001 USDC/step, 1024 MiB)");
    });
  });

  describe("the chain facts, rebuilt from escrow events in log order", function () {
    const A = addr(1);
    const B = addr(2);
    const unassigned = (
      job: number,
      provider: string,
      newEpoch: number,
      reason: number = UnassignReason.Coordinator,
    ) => ["ProviderUnassigned", { jobId: BigInt(job), provider, newEpoch: BigInt(newEpoch), reason: BigInt(reason) }];
    const reported = (job: number, provider: string, epoch: number) => [
      "CheckpointReported",
      { jobId: BigInt(job), provider, epoch: BigInt(epoch) },
    ];
    const accepted = (job: number, provider: string, epoch: number, steps: number) => [
      "CheckpointAccepted",
      { jobId: BigInt(job), provider, epoch: BigInt(epoch), stepsCredited: BigInt(steps) },
    ];
    async function replay(events: unknown[][]) {
      const t = new TrackRecords();
      events.forEach(([name, args], i) => t.apply(name as string, args as Record<string, unknown>, 100 + i));
      const reads: number[] = [];
      await t.resolve(async (n) => (reads.push(n), 5_000n + BigInt(n)));
      return { t, reads };
    }

    const lapsed = (job: number, provider: string, epoch: number) => [
      "CheckpointLapsed",
      { jobId: BigInt(job), provider, epoch: BigInt(epoch) },
    ];

    it("every hold that ends without an accepted checkpoint is one strike: idle, junk-reporting, refused, lapsed", async function () {
      const { t, reads } = await replay([
        unassigned(1, A, 2), // held epoch 1, no report: idle (kept off job 1)
        reported(1, B, 2),
        unassigned(1, B, 3), // reported junk in its epoch, nothing accepted: a strike, not kept off
        unassigned(2, B, 2, UnassignReason.Refused), // refused: a strike (and fenced on chain)
        reported(3, A, 1),
        unassigned(3, A, 3, UnassignReason.LeaseLapsed), // its report was in epoch 1, it held epoch 2: idle
      ]);
      expect([...t.idleOn].map(([j, s]) => [j, [...s]])).to.deep.equal([
        ["1", [A.toLowerCase()]],
        ["3", [A.toLowerCase()]],
      ]);
      expect([...t.struckOn].map(([j, s]) => [j, [...s]])).to.deep.equal([
        ["1", [A.toLowerCase(), B.toLowerCase()]],
        ["2", [B.toLowerCase()]],
        ["3", [A.toLowerCase()]],
      ]);
      expect(t.records.get(A.toLowerCase())).to.deep.equal({ acceptedSteps: 0, strikes: 2, lastStrikeAt: 5_105n });
      expect(t.records.get(B.toLowerCase())).to.deep.equal({ acceptedSteps: 0, strikes: 2, lastStrikeAt: 5_103n });
      expect(reads).to.deep.equal([105, 103]); // one read per distinct block of a latest strike
    });

    it("a hold that leaves with its report pending is struck once, even when that report lapses later; the lapse keeps it off the job", async function () {
      const { t } = await replay([reported(1, A, 1), unassigned(1, A, 2), lapsed(1, A, 1)]);
      expect(t.records.get(A.toLowerCase())).to.deep.include({ strikes: 1 });
      expect(t.idleOn.get("1")?.has(A.toLowerCase())).to.equal(true);
      // Its pending report accepted after it left: the strike is cleared, and it may take the job again.
      const ok = (await replay([reported(1, A, 1), unassigned(1, A, 2), accepted(1, A, 1, 10)])).t;
      expect(ok.records.get(A.toLowerCase())).to.deep.include({ acceptedSteps: 10, strikes: 0 });
      expect(ok.idleOn.has("1")).to.equal(false);
      // A hold with an accepted checkpoint in it ends without a strike.
      const done = (await replay([reported(1, A, 1), accepted(1, A, 1, 10), unassigned(1, A, 2)])).t;
      expect(done.records.get(A.toLowerCase())).to.deep.include({ strikes: 0 });
      expect(done.struckOn.has("1")).to.equal(false);
    });

    it("an accepted checkpoint adds its steps and clears the strikes (not the job's exclusion)", async function () {
      const { t } = await replay([unassigned(1, A, 2), accepted(2, A, 1, 40), unassigned(3, A, 2)]);
      expect(t.records.get(A.toLowerCase())).to.deep.equal({ acceptedSteps: 40, strikes: 1, lastStrikeAt: 5_102n });
      const cleared = (await replay([unassigned(1, A, 2), accepted(2, A, 1, 40)])).t;
      expect(cleared.records.get(A.toLowerCase())).to.deep.include({ acceptedSteps: 40, strikes: 0 });
      expect(cleared.idleOn.get("1")?.has(A.toLowerCase())).to.equal(true);
      cleared.forgetJob(1n);
      expect(cleared.idleOn.has("1")).to.equal(false);
    });
  });
});
