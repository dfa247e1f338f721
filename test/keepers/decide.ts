/**
 * The keepers' pure decisions, without a chain: the coordinator's assignment rule (every exclusion, ties) and its
 * missed-heartbeat rule at the timeout boundary, the collector's grouping and threshold, the finalizer's
 * selection, proof of reserves.
 */
import { expect } from "chai";
import { memoryNeed } from "../../keepers/coordinator/config.ts";
import { templateMemoryMiB } from "../../keepers/coordinator/stepTime.ts";
import { loadTemplate, stepMemoryBytes } from "../../workloads/index.ts";
import { getAddress } from "ethers";
import {
  compareProviders,
  decideRunning,
  jobBeatKey,
  jobEpochKey,
  planCoordinator,
  type BeatRecord,
  type CoordinatorView,
  type CoordinatorJob,
  type ProviderView,
} from "../../keepers/coordinator/decide.ts";
import {
  addSignature,
  applicability,
  decisionCall,
  parseSubmission,
  readySignatures,
  type JobState,
  type Pool,
  type Submission,
} from "../../keepers/collector/decide.ts";
import { nothingLeftToDo, planFinalizer } from "../../keepers/finalizer/decide.ts";
import { blocksToCheck, checkReserves } from "../../keepers/reserves/decide.ts";
import { openJob as anOpenJob } from "../helpers/jobs.ts";

const T = 5_000; // heartbeat timeout
const NOW = 1_000_000;
const addr = (n: number) => getAddress("0x" + n.toString(16).padStart(40, "0"));
const TEMPLATE = "0x" + "ab".repeat(32);

const openJob = (over: Partial<CoordinatorJob> = {}) => anOpenJob({ templateId: TEMPLATE, ...over });

function provider(n: number, over: Partial<ProviderView> = {}): ProviderView {
  return { address: addr(n), pricePerStep: 900n, memoryMiB: 1024, active: true, registered: true, ...over };
}

const idle = (receivedAt = NOW): BeatRecord => ({ receivedAt, jobId: "0", epoch: "0" });

function view(over: Partial<CoordinatorView> = {}, beats: [ProviderView, BeatRecord][] = []): CoordinatorView {
  const providers = over.providers ?? [];
  const lastBeat = new Map<string, BeatRecord>();
  for (const p of providers) lastBeat.set(p.address.toLowerCase(), idle());
  for (const [p, b] of beats) lastBeat.set(p.address.toLowerCase(), b);
  return {
    nowMs: NOW,
    chainTime: 1_000n,
    timeoutMs: T,
    isCoordinator: true,
    jobs: [openJob()],
    providers,
    lastBeat,
    lastJobBeat: new Map(),
    watchStart: new Map(),
    fenced: new Map(),
    memoryNeedMiB: () => 0,
    ...over,
  };
}

const assigned = (v: CoordinatorView) =>
  planCoordinator(v)
    .filter((d) => d.action === "assign")
    .map((d) => d.provider);
const only = (v: CoordinatorView) => {
  const ds = planCoordinator(v).filter((d) => d.jobId === 1n);
  expect(ds).to.have.length(1);
  return ds[0];
};

describe("keepers: coordinator assignment rule (pure)", function () {
  it("assigns the cheapest eligible provider", function () {
    const v = view({
      providers: [
        provider(3, { pricePerStep: 950n }),
        provider(2, { pricePerStep: 900n }),
        provider(1, { pricePerStep: 999n }),
      ],
    });
    const d = only(v);
    expect(d.action).to.equal("assign");
    expect(d.provider).to.equal(addr(2));
  });

  it("breaks a price tie by most memory, then by lowest address", function () {
    const v = view({
      providers: [provider(5, { memoryMiB: 2048 }), provider(4, { memoryMiB: 4096 }), provider(3, { memoryMiB: 4096 })],
    });
    expect(only(v).provider).to.equal(addr(3));
    expect(compareProviders(provider(4, { memoryMiB: 4096 }), provider(3, { memoryMiB: 4096 }))).to.equal(1);
  });

  it("picks the same provider whatever order the providers were listed in (two coordinators agree)", function () {
    const ps = [
      provider(7),
      provider(2, { memoryMiB: 2048 }),
      provider(9, { pricePerStep: 800n, memoryMiB: 512 }),
      provider(4, { pricePerStep: 800n, memoryMiB: 512 }),
    ];
    const picks = [ps, [...ps].reverse(), [ps[2], ps[0], ps[3], ps[1]]].map(
      (list) => only(view({ providers: list })).provider,
    );
    expect(new Set(picks)).to.have.property("size", 1);
    expect(picks[0]).to.equal(addr(4));
  });

  const exclusions: [string, (p: ProviderView) => Partial<CoordinatorView> | ProviderView, string][] = [
    ["not registered", (p) => ({ ...p, registered: false }), "not registered"],
    ["inactive", (p) => ({ ...p, active: false }), "inactive"],
    ["price above the job's max", (p) => ({ ...p, pricePerStep: 1_001n }), "price above max"],
    ["memory below the template's need", (p) => ({ ...p, memoryMiB: 1023 }), "memory too small"],
  ];
  for (const [name, change, reason] of exclusions) {
    it(`excludes a provider: ${name}`, function () {
      const v = view({ providers: [change(provider(1)) as ProviderView], memoryNeedMiB: () => 1024 });
      const d = only(v);
      expect(d.action).to.equal("wait");
      expect(d.reason).to.contain(reason);
    });
  }

  it("a known template's own one-atom memory is the floor of its need: a provider below it is not assigned", function () {
    this.timeout(120_000); // the first loadTemplate builds every template's graphs
    const cnn = loadTemplate("mnist-cnn");
    const ownNeed = templateMemoryMiB(cnn.templateId);
    expect(ownNeed)
      .to.equal(Math.ceil(stepMemoryBytes(cnn, 1) / 2 ** 20))
      .and.to.be.above(2);
    const need = memoryNeed({ minMemoryMiB: 0, templateMemoryMiB: {} }, templateMemoryMiB);
    const job = openJob({ templateId: cnn.templateId });
    const small = view({ jobs: [job], providers: [provider(1, { memoryMiB: ownNeed - 1 })], memoryNeedMiB: need });
    expect(only(small).reason).to.contain("memory too small");
    const enough = view({ jobs: [job], providers: [provider(1, { memoryMiB: ownNeed })], memoryNeedMiB: need });
    expect(only(enough).action).to.equal("assign");
    // the operator's larger need still counts; an unknown template falls back to the operator's minimum
    expect(
      memoryNeed({ minMemoryMiB: 0, templateMemoryMiB: { [cnn.templateId]: 64 } }, templateMemoryMiB)(cnn.templateId),
    ).to.equal(64);
    expect(need("0x" + "ab".repeat(32))).to.equal(0);
  });

  it("excludes a provider busy on another Running job", function () {
    const p = provider(1);
    const running = openJob({ jobId: 2n, status: "Running", epoch: 1n, provider: p.address, leaseExpiresAt: 2_000n });
    const v = view({ providers: [p], jobs: [openJob(), running], watchStart: new Map([[jobEpochKey(2n, 1n), NOW]]) });
    expect(only(v).reason).to.contain("busy");
  });

  it("excludes a provider fenced on this job (but not on another one)", function () {
    const p = provider(1);
    const v = view({ providers: [p], fenced: new Map([["1", new Set([p.address.toLowerCase()])]]) });
    expect(only(v).reason).to.contain("fenced");
    const other = view({ providers: [p], fenced: new Map([["2", new Set([p.address.toLowerCase()])]]) });
    expect(only(other).action).to.equal("assign");
  });

  it("requires the remaining budget to cover the remaining steps at the provider's price (exactly enough is enough)", function () {
    const p = provider(1, { pricePerStep: 1_000n });
    // 60 steps left (40 accepted), 60 × 1000 = 60_000 needed; budget − paid = 60_000.
    const exact = openJob({ acceptedStep: 40, budget: 100_000n, paid: 40_000n });
    expect(only(view({ providers: [p], jobs: [exact] })).action).to.equal("assign");
    const short = openJob({ acceptedStep: 40, budget: 100_000n, paid: 40_001n });
    expect(only(view({ providers: [p], jobs: [short] })).reason).to.contain("budget short");
  });

  it("requires free stake for the lock assign takes: price × interval, at least minStake (lock−1 short, lock enough)", function () {
    // 900/step × interval 10 = 9_000 to lock.
    const job = openJob({ checkpointInterval: 10 });
    for (const [free, action] of [
      [8_999n, "wait"],
      [9_000n, "assign"],
      [9_001n, "assign"],
    ] as const) {
      const d = only(view({ providers: [provider(1, { stakeFree: free })], jobs: [job], minStake: 1n }));
      expect(d.action, `free ${free}`).to.equal(action);
      if (action === "wait") expect(d.reason).to.contain("stake short");
    }
    // The network minimum floors the lock: 1_000_000 needed although price × interval is 9_000.
    const floored = view({ providers: [provider(1, { stakeFree: 999_999n })], jobs: [job], minStake: 1_000_000n });
    expect(only(floored).reason).to.contain("stake short");
    const enough = view({ providers: [provider(1, { stakeFree: 1_000_000n })], jobs: [job], minStake: 1_000_000n });
    expect(only(enough).action).to.equal("assign");
    // An unstaked cheapest identity never takes the job from a staked one.
    const idleSybil = provider(1, { pricePerStep: 1n, stakeFree: 0n });
    const honest = provider(2, { stakeFree: 1_000_000n });
    const pick = only(view({ providers: [idleSybil, honest], jobs: [job], minStake: 1_000_000n }));
    expect([pick.action, pick.provider]).to.deep.equal(["assign", honest.address]);
  });

  it("accepts a price equal to the job's max", function () {
    expect(only(view({ providers: [provider(1, { pricePerStep: 1_000n })] })).action).to.equal("assign");
  });

  it("counts a provider alive exactly at the timeout and not 1 ms later", function () {
    for (const [age, action] of [
      [T - 1, "assign"],
      [T, "assign"],
      [T + 1, "wait"],
    ] as const) {
      const p = provider(1);
      const d = only(view({ providers: [p] }, [[p, idle(NOW - age)]]));
      expect(d.action, `age ${age}`).to.equal(action);
      if (action === "wait") expect(d.reason).to.contain("no recent heartbeat");
    }
  });

  it("excludes a provider that never sent a heartbeat", function () {
    const p = provider(1);
    const v = view({ providers: [p] });
    v.lastBeat.clear();
    expect(only(v).reason).to.contain("no recent heartbeat");
  });

  it("excludes a provider whose latest beat names a job it no longer holds (stale worker), until it beats idle", function () {
    const p = provider(1);
    const stale = only(view({ providers: [p] }, [[p, { receivedAt: NOW, jobId: "1", epoch: "1" }]]));
    expect(stale.reason).to.contain("stale heartbeat");
    expect(only(view({ providers: [p] }, [[p, idle()]])).action).to.equal("assign");
  });

  it("gives two Open jobs two different providers, the older job the better one", function () {
    const v = view({
      providers: [provider(1, { pricePerStep: 900n }), provider(2, { pricePerStep: 950n })],
      jobs: [openJob({ jobId: 2n }), openJob({ jobId: 1n })],
    });
    const ds = planCoordinator(v).filter((d) => d.action === "assign");
    expect(ds.map((d) => [d.jobId, d.provider])).to.deep.equal([
      [1n, addr(1)],
      [2n, addr(2)],
    ]);
  });

  it("does not assign a job whose steps are all accepted (it waits for the verdict)", function () {
    const d = only(view({ providers: [provider(1)], jobs: [openJob({ acceptedStep: 100 })] }));
    expect(d.action).to.equal("wait");
    expect(d.reason).to.contain("awaiting verdict");
  });

  it("does not assign when its key is not the coordinator", function () {
    const d = only(view({ providers: [provider(1)], isCoordinator: false }));
    expect(d.action).to.equal("wait");
    expect(assigned(view({ providers: [provider(1)], isCoordinator: false }))).to.deep.equal([]);
  });

  it("waits with a reason when nobody is registered", function () {
    expect(only(view({ providers: [] })).reason).to.contain("no providers registered");
  });
});

describe("keepers: coordinator missed-heartbeat rule (pure)", function () {
  const P = addr(1);
  const running = (over: Partial<CoordinatorJob> = {}) =>
    openJob({ status: "Running", epoch: 3n, provider: P, leaseExpiresAt: 2_000n, acceptedStep: 10, ...over });
  const at = (nowMs: number, beats: [string, number][] = [], over: Partial<CoordinatorView> = {}) =>
    view({
      nowMs,
      jobs: [running()],
      lastJobBeat: new Map(beats),
      watchStart: new Map([[jobEpochKey(1n, 3n), 0]]),
      ...over,
    });

  it("unassigns only once the last beat for (job, epoch) is older than the timeout: t−1 and t keep, t+1 unassigns", function () {
    const last = 500_000;
    const key = jobBeatKey(1n, 3n, P);
    expect(decideRunning(running(), at(last + T - 1, [[key, last]])).action).to.equal("keep");
    expect(decideRunning(running(), at(last + T, [[key, last]])).action).to.equal("keep");
    const d = decideRunning(running(), at(last + T + 1, [[key, last]]));
    expect(d.action).to.equal("unassign");
    expect(d.reason).to.contain(`${T + 1} ms`);
  });

  it("times a job with no beat yet from when the coordinator first saw it", function () {
    const start = 700_000;
    const v = (now: number) => at(now, [], { watchStart: new Map([[jobEpochKey(1n, 3n), start]]) });
    expect(decideRunning(running(), v(start + T)).action).to.equal("keep");
    expect(decideRunning(running(), v(start + T + 1)).action).to.equal("unassign");
  });

  it("gives a new assignee startGraceMs more before its first beat (it may be loading its template), not after", function () {
    const start = 700_000;
    const G = 20_000;
    const v = (now: number, beats: [string, number][] = []) =>
      at(now, beats, { watchStart: new Map([[jobEpochKey(1n, 3n), start]]), startGraceMs: G });
    expect(decideRunning(running(), v(start + T + G - 1)).action).to.equal("keep");
    expect(decideRunning(running(), v(start + T + G)).action).to.equal("keep");
    expect(decideRunning(running(), v(start + T + G + 1)).action).to.equal("unassign");
    const key = jobBeatKey(1n, 3n, P);
    expect(decideRunning(running(), v(start + 1 + T + 1, [[key, start + 1]])).action).to.equal("unassign");
  });

  it("ignores beats for an older epoch (an old worker cannot keep the new assignment alive)", function () {
    const oldEpochBeat = jobBeatKey(1n, 2n, P);
    expect(decideRunning(running(), at(NOW, [[oldEpochBeat, NOW]])).action).to.equal("unassign");
  });

  it("ignores beats from another provider for the same (job, epoch)", function () {
    expect(decideRunning(running(), at(NOW, [[jobBeatKey(1n, 3n, addr(2)), NOW]])).action).to.equal("unassign");
  });

  it("unassigns a lapsed on-chain lease even without the coordinator role; the lease is live at its last second", function () {
    const fresh = [[jobBeatKey(1n, 3n, P), NOW]] as [string, number][];
    expect(decideRunning(running(), at(NOW, fresh, { isCoordinator: false, chainTime: 2_000n })).action).to.equal(
      "keep",
    );
    const d = decideRunning(running(), at(NOW, fresh, { isCoordinator: false, chainTime: 2_001n }));
    expect(d.action).to.equal("unassign");
    expect(d.reason).to.contain("lease lapsed");
  });

  it("without the coordinator role, leaves a silent provider alone while its lease is live", function () {
    expect(decideRunning(running(), at(NOW, [], { isCoordinator: false })).action).to.equal("keep");
  });

  it("leaves a job whose training is complete alone (it waits for the verdict)", function () {
    expect(decideRunning(running({ acceptedStep: 100 }), at(NOW, [], { chainTime: 9_999n })).action).to.equal("keep");
  });
});

describe("keepers: collector grouping and threshold (pure)", function () {
  const digest = "0x" + "11".repeat(32);
  const body = (signer: string, over: Record<string, unknown> = {}) => ({
    kind: "checkpoint",
    message: { jobId: "1", epoch: "2", step: 10, checkpointHash: "0x" + "22".repeat(32), accept: true },
    digest,
    signer,
    signature: "0x" + "33".repeat(65),
    ...over,
  });
  const sub = (signer: string) => parseSubmission(body(signer)) as Submission;

  it("parses a verifier's body (bigints as decimal strings) and rejects malformed ones with a reason", function () {
    const s = sub(addr(1));
    expect(s.decision).to.deep.equal({
      kind: "checkpoint",
      message: { jobId: 1n, epoch: 2n, step: 10, checkpointHash: "0x" + "22".repeat(32), accept: true },
    });
    expect(parseSubmission(body(addr(1), { kind: "other" }))).to.be.a("string");
    expect(parseSubmission(body(addr(1), { digest: "0x12" }))).to.be.a("string");
    expect(parseSubmission(body("nobody"))).to.be.a("string");
    expect(parseSubmission(body(addr(1), { message: { jobId: "1", epoch: "x", step: 10 } }))).to.be.a("string");
    const v = parseSubmission({
      kind: "verdict",
      message: { jobId: "3", modelHash: "0x" + "44".repeat(32), metric: "9712", passed: true },
      digest,
      signer: addr(1),
      signature: "0x" + "33".repeat(65),
    }) as Submission;
    expect(v.decision).to.deep.equal({
      kind: "verdict",
      message: { jobId: 3n, modelHash: "0x" + "44".repeat(32), metric: 9712n, passed: true },
    });
  });

  it("counts the same signer once, however often it re-sends", function () {
    const pool: Pool = new Map();
    expect(addSignature(pool, sub(addr(1)))).to.deep.equal({ added: true, count: 1 });
    expect(addSignature(pool, sub(addr(1)))).to.deep.equal({ added: false, count: 1 });
    expect(addSignature(pool, sub(addr(2)))).to.deep.equal({ added: true, count: 2 });
    expect(pool.size).to.equal(1);
  });

  it("is ready at `threshold` current owners, sorted by address; ex-owners do not count", function () {
    const pool: Pool = new Map();
    for (const n of [9, 1, 5]) addSignature(pool, sub(addr(n)));
    const entry = pool.get(digest)!;
    const owners = (...ns: number[]) => new Set(ns.map((n) => addr(n).toLowerCase()));
    expect(readySignatures(entry, owners(1, 5, 9), 2)!.map((s) => s.signer)).to.deep.equal([addr(1), addr(5)]);
    expect(readySignatures(entry, owners(5, 9), 2)!.map((s) => s.signer)).to.deep.equal([addr(5), addr(9)]);
    expect(readySignatures(entry, owners(9, 7), 2)).to.equal(undefined);
    expect(readySignatures(entry, owners(1, 5, 9), 3)).to.have.length(3);
  });

  const job = (over: Partial<JobState> = {}): JobState => ({
    status: "Running",
    epoch: 2n,
    totalSteps: 100,
    acceptedStep: 0,
    acceptedHash: "0x" + "00".repeat(32),
    pendingStep: 10,
    pendingHash: "0x" + "22".repeat(32),
    pendingEpoch: 2n,
    ...over,
  });

  it("sends a checkpoint decision only while that exact checkpoint is pending", function () {
    const d = sub(addr(1)).decision;
    expect(applicability(d, job()).action).to.equal("send");
    expect(applicability(d, job({ epoch: 3n, pendingEpoch: 3n })).action).to.equal("stale");
    // Its reporter was unassigned (epoch moved on, job Open or reassigned): the checkpoint is still decidable.
    expect(applicability(d, job({ epoch: 3n })).action).to.equal("send");
    expect(applicability(d, job({ epoch: 3n, status: "Open" })).action).to.equal("send");
    expect(applicability(d, job({ epoch: 3n, pendingStep: 0 })).action).to.equal("stale");
    expect(
      applicability(d, job({ pendingStep: 0, acceptedStep: 10, acceptedHash: "0x" + "22".repeat(32) })).action,
    ).to.equal("stale");
    expect(applicability(d, job({ pendingStep: 0 })).action).to.equal("wait");
    expect(applicability(d, job({ pendingHash: "0x" + "99".repeat(32) })).action).to.equal("stale");
    expect(applicability(d, job({ status: "Cancelled" })).action).to.equal("stale");
  });

  it("sends a verdict once all steps are accepted with that model hash, and never after the verdict", function () {
    const d = {
      kind: "verdict" as const,
      message: { jobId: 1n, modelHash: "0x" + "44".repeat(32), metric: 1n, passed: true },
    };
    const done = { acceptedStep: 100, acceptedHash: "0x" + "44".repeat(32), pendingStep: 0 };
    expect(applicability(d, job(done)).action).to.equal("send");
    expect(applicability(d, job({ ...done, status: "Open" })).action).to.equal("send");
    expect(applicability(d, job({ acceptedStep: 90 })).action).to.equal("wait");
    expect(applicability(d, job({ ...done, acceptedHash: "0x" + "45".repeat(32) })).action).to.equal("stale");
    expect(applicability(d, job({ ...done, status: "DisputeWindow" })).action).to.equal("stale");
  });

  it("builds the escrow call for each kind", function () {
    const d = sub(addr(1)).decision;
    expect(decisionCall(d, "0xab").method).to.equal("acceptCheckpoint");
    expect(
      decisionCall({ ...d, message: { ...(d.message as object), accept: false } } as typeof d, "0xab").method,
    ).to.equal("refuseCheckpoint");
  });
});

describe("keepers: finalizer selection (pure)", function () {
  const e = (n: number, amount: bigint) => ({ provider: addr(n), amount });

  it("settles Settleable and ArbiterTimedOut jobs, then claims their providers' earnings", function () {
    const plan = planFinalizer([
      { jobId: 1n, status: "Settleable", earnings: [e(1, 100n), e(2, 0n)] },
      { jobId: 2n, status: "ArbiterTimedOut", earnings: [] },
    ]);
    expect(plan.map((a) => a.map((x) => `${x.jobId}:${x.method}`))).to.deep.equal([
      ["1:settle", "1:claimEarnings"],
      ["2:settle"],
    ]);
  });

  it("claims on Settled and Cancelled jobs, skips zero earnings, and leaves live jobs alone", function () {
    const plan = planFinalizer([
      { jobId: 1n, status: "Settled", earnings: [e(1, 5n), e(2, 7n)] },
      { jobId: 2n, status: "Cancelled", earnings: [e(3, 1n)] },
      { jobId: 3n, status: "DisputeWindow", earnings: [e(1, 5n)] },
      { jobId: 4n, status: "Disputed", earnings: [e(1, 5n)] },
      { jobId: 5n, status: "Running", earnings: [e(1, 5n)] },
      { jobId: 6n, status: "Settled", earnings: [e(1, 0n)] },
    ]);
    expect(plan.flat().map((a) => `${a.jobId}:${a.method}:${"provider" in a ? a.provider : ""}`)).to.deep.equal([
      `1:claimEarnings:${addr(1)}`,
      `1:claimEarnings:${addr(2)}`,
      `2:claimEarnings:${addr(3)}`,
    ]);
  });

  it("forgets a job once it is final with nothing left to claim", function () {
    expect(nothingLeftToDo({ jobId: 1n, status: "Settled", earnings: [e(1, 0n)] })).to.equal(true);
    expect(nothingLeftToDo({ jobId: 1n, status: "Settled", earnings: [e(1, 1n)] })).to.equal(false);
    expect(nothingLeftToDo({ jobId: 1n, status: "Settleable", earnings: [] })).to.equal(false);
  });
});

describe("keepers: proof of reserves (pure)", function () {
  it("fails only when held < owed", function () {
    expect(checkReserves(10n, 10n)).to.include({ ok: true, surplus: 0n, deficit: 0n });
    expect(checkReserves(9n, 10n)).to.include({ ok: false, deficit: 1n });
  });

  it("checks every new block once, at most `max` of them", function () {
    expect(blocksToCheck(undefined, 7, 5)).to.deep.equal({ blocks: [7], skipped: 0 });
    expect(blocksToCheck(7, 7, 5)).to.deep.equal({ blocks: [], skipped: 0 });
    expect(blocksToCheck(7, 9, 5)).to.deep.equal({ blocks: [8, 9], skipped: 0 });
    expect(blocksToCheck(0, 9, 3)).to.deep.equal({ blocks: [7, 8, 9], skipped: 6 });
  });
});

describe("coordinator: chain time between blocks", function () {
  it("the head's timestamp, moved on by the wall time since it was seen less a second (boundaries at 1,999 / 2,000 ms)", async function () {
    const { projectedChainTime } = await import("../../keepers/coordinator/tick.ts");
    const cases: [number, bigint][] = [
      [0, 100n],
      [1_999, 100n],
      [2_000, 101n],
      [2_999, 101n],
      [61_000, 160n],
    ];
    for (const [since, expected] of cases) expect(projectedChainTime(100n, since), `${since} ms`).to.equal(expected);
  });
});
