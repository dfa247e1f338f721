/**
 * The collector's rules against one malicious verifier, pure (keepers/collector/decide.ts): what is a
 * claim (`isClaim`), one claim per owner per checkpoint whatever the finder field says and one verdict per owner
 * per job (`conflictReason`), the hold bounded per checkpoint (`holdReason`), which pooled entries leave the pool
 * (`poolAction`), and when an owner is silent (`isSilent`, `silentOwners`, `silenceReason`). The same rules on
 * the real chain, Safe and collector: test/adversary/collectorHold.ts. And `nextStep`, the whole decision the
 * collector acts on, as one table.
 */
import { expect } from "chai";
import { getAddress } from "ethers";
import {
  addSignature,
  conflictReason,
  holdReason,
  isClaim,
  isSilent,
  nextStep,
  parseSubmission,
  poolAction,
  silenceReason,
  silentOwners,
  SILENCE_DEFAULTS,
  type ClaimState,
  type JobState,
  type Pool,
  type StepContext,
  type Submission,
  type VerifierDecision,
} from "../../keepers/collector/decide.ts";

const addr = (n: number) => getAddress("0x" + n.toString(16).padStart(40, "0"));
const low = (n: number) => addr(n).toLowerCase();
const hex = (b: string) => "0x" + b.repeat(32);
const SIG = "0x" + "33".repeat(65);
const AT = { jobId: "1", epoch: "2", step: 10, checkpointHash: hex("22") };
const FAULT = { step: 7, inputHash: hex("a1"), committedHash: hex("a2"), replayedHash: hex("a3") };
const OWNERS = new Set([1, 2, 3].map(low));

/** A FaultRefusal signed by owner `signer` naming `finder` (digest: any distinct 32 bytes per fault). */
function fault(signer: number, finder: number, digest: string, at: Record<string, unknown> = {}): Submission {
  const body = {
    kind: "fault",
    message: { ...AT, ...at, fault: { ...FAULT, finder: addr(finder) } },
    digest,
    signer: addr(signer),
    signature: SIG,
  };
  return parseSubmission(body) as Submission;
}
function plain(signer: number, accept = true, at: Record<string, unknown> = {}): Submission {
  const body = { kind: "checkpoint", message: { ...AT, ...at, accept }, digest: hex(accept ? "a0" : "a9") };
  return parseSubmission({ ...body, signer: addr(signer), signature: SIG }) as Submission;
}
function verdict(signer: number, jobId: string, metric: number, digest: string): Submission {
  const message = { jobId, modelHash: hex("44"), metric: String(metric), passed: true };
  return parseSubmission({ kind: "verdict", message, digest, signer: addr(signer), signature: SIG }) as Submission;
}
function poolOf(...subs: Submission[]): Pool {
  const pool: Pool = new Map();
  for (const s of subs) addSignature(pool, s);
  return pool;
}
const accept = plain(1).decision;
/** Job 1 as the chain shows it while AT's checkpoint is pending (reported at 1 000 s). */
const RUNNING: JobState = {
  status: "Running",
  epoch: 2n,
  totalSteps: 100,
  acceptedStep: 0,
  acceptedHash: hex("00"),
  pendingStep: 10,
  pendingHash: hex("22"),
  pendingEpoch: 2n,
  reportedAt: 1_000n,
};

describe("keepers: collector rules against one malicious verifier (pure)", function () {
  describe("isClaim: only a fault refusal its finder signed is a claim", function () {
    it("its finder's signature makes it a claim; a refusal naming another finder is not, until that finder signs", function () {
      const own = poolOf(fault(1, 1, hex("f1")));
      expect(isClaim(own.get(hex("f1"))!)).to.equal(true);
      const spoofed = poolOf(fault(1, 99, hex("f2")));
      expect(isClaim(spoofed.get(hex("f2"))!), "signed by 1, finder 99").to.equal(false);
      const confirmedLater = poolOf(fault(2, 1, hex("f3")), fault(1, 1, hex("f3")));
      expect(isClaim(confirmedLater.get(hex("f3"))!)).to.equal(true);
      expect(isClaim(poolOf(plain(1)).get(hex("a0"))!)).to.equal(false);
    });
  });

  describe("conflictReason: one claim per owner per checkpoint, whatever the finder field says", function () {
    it("a second claim by the same owner with another digest is refused, with a reason", function () {
      const pool = poolOf(fault(1, 1, hex("f1")));
      expect(conflictReason(pool, fault(1, 1, hex("f2")))).to.match(/already has a fault claim on this checkpoint/);
    });

    it("finder-spoofed refusals count as the signer's claim: a fresh finder is no fresh claim", function () {
      const spoofed = poolOf(fault(1, 98, hex("f1")));
      expect(conflictReason(spoofed, fault(1, 99, hex("f2"))), "spoof after spoof").to.contain(hex("f1"));
      expect(conflictReason(spoofed, fault(1, 1, hex("f2"))), "own claim after a spoof").to.be.a("string");
      const own = poolOf(fault(1, 1, hex("f1")));
      expect(conflictReason(own, fault(1, 99, hex("f2"))), "spoof after its own claim").to.be.a("string");
      expect(conflictReason(own, fault(1, 2, hex("f2"))), "naming another owner as finder").to.be.a("string");
    });

    it("a confirmation of another owner's claim is allowed, even by an owner that has a claim of its own", function () {
      const pool = poolOf(fault(1, 1, hex("f1")), fault(2, 2, hex("f2")));
      expect(conflictReason(pool, fault(2, 1, hex("f1"))), "2 confirms 1's claim").to.equal(undefined);
      expect(conflictReason(pool, fault(3, 1, hex("f1"))), "3 confirms 1's claim").to.equal(undefined);
      addSignature(pool, fault(3, 1, hex("f1")));
      expect(conflictReason(pool, fault(3, 2, hex("f2"))), "3 confirms 2's claim too").to.equal(undefined);
      expect(conflictReason(pool, fault(3, 3, hex("f3"))), "and may still make its own claim").to.equal(undefined);
    });

    it("joining a refusal its finder did not sign is a claim, not a confirmation", function () {
      const pool = poolOf(fault(1, 99, hex("f1")), fault(2, 2, hex("f2")));
      expect(conflictReason(pool, fault(2, 99, hex("f1"))), "2 already claimed").to.be.a("string");
      expect(conflictReason(pool, fault(3, 99, hex("f1"))), "3's first").to.equal(undefined);
    });

    it("a re-send, another checkpoint and plain decisions are never a conflict", function () {
      const pool = poolOf(fault(1, 1, hex("f1")), plain(1));
      expect(conflictReason(pool, fault(1, 1, hex("f1")))).to.equal(undefined);
      expect(conflictReason(pool, fault(1, 1, hex("f2"), { step: 20 }))).to.equal(undefined);
      expect(conflictReason(pool, fault(1, 1, hex("f2"), { epoch: "3" }))).to.equal(undefined);
      expect(conflictReason(pool, plain(1, false))).to.equal(undefined);
    });

    it("one verdict per owner per job: another metric is refused, another job and a re-send are not", function () {
      const pool = poolOf(verdict(1, "1", 9_000, hex("e1")));
      expect(conflictReason(pool, verdict(1, "1", 9_001, hex("e2")))).to.match(/already signed a verdict on job 1/);
      expect(conflictReason(pool, verdict(1, "1", 9_000, hex("e1")))).to.equal(undefined);
      expect(conflictReason(pool, verdict(1, "2", 9_001, hex("e3")))).to.equal(undefined);
      expect(conflictReason(pool, verdict(2, "1", 9_001, hex("e2")))).to.equal(undefined);
    });
  });

  describe("holdReason: only a claim holds, and the hold is bounded per checkpoint", function () {
    const HOLD = 2_000;
    const states = (pool: Pool, seen: Record<string, number>): ClaimState[] =>
      [...pool.values()]
        .filter((e) => e.decision.kind === "fault")
        .map((entry) => ({ entry, firstSeenMs: seen[entry.digest] ?? 0, notReproduced: new Set<string>() }));

    it("a refusal naming another finder holds nothing, however many owners have not answered it", function () {
      const pool = poolOf(fault(1, 99, hex("f1")), plain(2), plain(3));
      expect(holdReason(accept, states(pool, { [hex("f1")]: 0 }), OWNERS, 2, 0, HOLD, 0)).to.equal(undefined);
      const own = poolOf(fault(1, 1, hex("f1")), plain(2), plain(3));
      expect(holdReason(accept, states(own, { [hex("f1")]: 0 }), OWNERS, 2, 0, HOLD, 0)).to.match(/unchecked/);
    });

    it("a later claim on the same checkpoint does not restart the clock: released holdMs after the first claim", function () {
      const pool = poolOf(fault(1, 1, hex("f1")), fault(2, 2, hex("f2")));
      const claims = states(pool, { [hex("f1")]: 1_000, [hex("f2")]: 1_000 + HOLD - 1 });
      expect(holdReason(accept, claims, OWNERS, 2, 1_000 + HOLD - 1, HOLD)).to.match(/unchecked/);
      expect(holdReason(accept, claims, OWNERS, 2, 1_000 + HOLD, HOLD), "2's fresh claim holds no more").to.equal(
        undefined,
      );
    });

    it("the clock starts at the plain decision's threshold when that came before the first claim", function () {
      const claims = states(poolOf(fault(1, 1, hex("f1"))), { [hex("f1")]: 5_000 });
      expect(holdReason(accept, claims, OWNERS, 2, 4_000 + HOLD - 1, HOLD, 4_000)).to.match(/unchecked/);
      expect(holdReason(accept, claims, OWNERS, 2, 4_000 + HOLD, HOLD, 4_000)).to.equal(undefined);
      expect(holdReason(accept, claims, OWNERS, 2, 5_000 + HOLD - 1, HOLD, 9_000), "claim first").to.match(/unch/);
      expect(holdReason(accept, claims, OWNERS, 2, 5_000 + HOLD, HOLD, 9_000)).to.equal(undefined);
    });

    it("a fault refusal with its threshold goes first, within the same bound", function () {
      const claims = states(poolOf(fault(1, 1, hex("f1")), fault(2, 1, hex("f1"))), { [hex("f1")]: 0 });
      expect(holdReason(accept, claims, OWNERS, 2, HOLD - 1, HOLD)).to.equal(
        "a fault refusal of this checkpoint goes first",
      );
      expect(holdReason(accept, claims, OWNERS, 2, HOLD, HOLD)).to.equal(undefined);
    });
  });

  describe("poolAction: only what is pending on chain stays in the pool", function () {
    const job = (over: Partial<JobState> = {}): JobState => ({ ...RUNNING, ...over });
    const refusal = fault(1, 99, hex("f1")).decision;

    it("keeps a pending checkpoint's entries while its decision window is open; a lapsed one is forgotten", function () {
      for (const d of [accept, refusal]) {
        expect(poolAction(d, job(), 1_000n + 3_600n)).to.equal("keep");
        expect(poolAction(d, job(), 1_000n + 3_601n), "lapsed: the same report may come again").to.equal("forget");
        expect(poolAction(d, job()), "no chain time: kept").to.equal("keep");
      }
    });

    it("drops as done only what can never apply again; forgets what a later report could make pending", function () {
      expect(
        poolAction(accept, job({ pendingStep: 0, acceptedStep: 10, acceptedHash: hex("22") })),
        "decided",
      ).to.equal("done");
      expect(poolAction(accept, job({ epoch: 3n, pendingStep: 0 })), "an older epoch").to.equal("done");
      expect(poolAction(accept, job({ status: "Cancelled" })), "training over").to.equal("done");
      expect(poolAction(accept, job({ pendingHash: hex("99") })), "another hash pending").to.equal("forget");
      expect(poolAction(accept, job({ pendingStep: 0 })), "not reported (yet)").to.equal("forget");
      expect(poolAction(plain(1, true, { epoch: "5" }).decision, job()), "a later epoch").to.equal("forget");
      expect(poolAction(accept, job({ status: "None", epoch: 0n, pendingStep: 0 })), "no such job (yet)").to.equal(
        "forget",
      );
    });

    it("keeps a verdict while training is incomplete, drops it once it can never apply", function () {
      const v = verdict(1, "1", 9_000, hex("e1")).decision;
      expect(poolAction(v, job())).to.equal("keep");
      expect(poolAction(v, job({ acceptedStep: 100, acceptedHash: hex("44"), pendingStep: 0 }))).to.equal("keep");
      expect(poolAction(v, job({ acceptedStep: 100, acceptedHash: hex("45"), pendingStep: 0 }))).to.equal("done");
      expect(poolAction(v, job({ status: "DisputeWindow" }))).to.equal("done");
    });
  });

  describe("the silence rule: an owner that posted nothing while N checkpoints were decided and X ms passed", function () {
    const { afterDecided: N, afterMs: X } = SILENCE_DEFAULTS;

    it("needs both, at the boundary: N − 1 decided or X − 1 ms is not silent, N and X is", function () {
      const last = { atMs: 1_000, decided: 5 };
      expect(isSilent(last, { atMs: 1_000 + X, decided: 5 + N }, SILENCE_DEFAULTS)).to.equal(true);
      expect(isSilent(last, { atMs: 1_000 + X - 1, decided: 5 + N }, SILENCE_DEFAULTS), "X − 1").to.equal(false);
      expect(isSilent(last, { atMs: 1_000 + X, decided: 5 + N - 1 }, SILENCE_DEFAULTS), "N − 1").to.equal(false);
      expect(isSilent(last, { atMs: 1_000 + 100 * X, decided: 5 }, SILENCE_DEFAULTS), "idle network").to.equal(false);
    });

    it("an owner never heard from counts from the collector's start; its next word ends the silence", function () {
      const start = { atMs: 0, decided: 0 };
      const now = { atMs: X, decided: N };
      const words = new Map([[low(1), now]]);
      expect([...silentOwners(OWNERS, words, start, now, SILENCE_DEFAULTS)]).to.deep.equal([low(2), low(3)]);
      words.set(low(2), { atMs: X, decided: N });
      expect([...silentOwners(OWNERS, words, start, now, SILENCE_DEFAULTS)]).to.deep.equal([low(3)]);
    });

    it("a plain decision does not wait for a silent owner, and waits for one that is not", function () {
      const pool = poolOf(plain(1), plain(2));
      expect(silenceReason(accept, pool, OWNERS, 0, 0, 15_000)).to.contain(low(3));
      expect(silenceReason(accept, pool, OWNERS, 0, 0, 15_000, new Set([low(3)]))).to.equal(undefined);
      expect(silenceReason(accept, poolOf(plain(1)), OWNERS, 0, 0, 15_000, new Set([low(3)]))).to.contain(low(2));
    });
  });

  describe("nextStep: the collector's whole decision on a decision with its threshold, as one table", function () {
    const running = RUNNING;
    const claimBy2 = fault(2, 2, hex("f2")); // owner 2's claim; owner 3 has not checked it
    const base = (over: Partial<StepContext> = {}): StepContext => {
      const pool = over.pool ?? poolOf(plain(1), plain(2));
      const claims = [...pool.values()]
        .filter((e) => e.decision.kind === "fault")
        .map((entry) => ({ entry, firstSeenMs: 0, notReproduced: new Set<string>() }));
      return {
        job: running,
        chainTimeS: 1_100n,
        pool,
        claims,
        owners: OWNERS,
        threshold: 2,
        nowMs: 0,
        holdMs: 2_000,
        quorumWaitMs: 0,
        readySinceMs: 0,
        silent: new Set(),
        ...over,
      };
    };
    const rows: [string, VerifierDecision, Partial<StepContext>, object][] = [
      [
        "job past training: drop, remembered",
        accept,
        { job: { ...running, status: "Cancelled" } },
        { action: "drop", remember: true },
      ],
      [
        "decision window closed (lapsed): drop, forgotten",
        accept,
        { chainTimeS: 1_000n + 3_601n },
        { action: "drop", remember: false },
      ],
      [
        "another hash pending: drop, forgotten",
        accept,
        { job: { ...running, pendingHash: hex("99") } },
        { action: "drop", remember: false },
      ],
      [
        "not reported yet: wait for the chain",
        accept,
        { job: { ...running, pendingStep: 0 } },
        { action: "wait", on: "chain" },
      ],
      [
        "an unchecked claim on the checkpoint: wait for it",
        accept,
        { pool: poolOf(plain(1), plain(3), claimBy2) },
        { action: "wait", on: "claim" },
      ],
      [
        "the hold is over, owner 3 has not spoken: wait for it",
        accept,
        { pool: poolOf(plain(1), claimBy2), nowMs: 2_000, holdSinceMs: 0, quorumWaitMs: 5_000 },
        { action: "wait", on: "owner" },
      ],
      [
        "owner 3 is silent by the rule: send",
        accept,
        { quorumWaitMs: 5_000, silent: new Set([low(3)]) },
        { action: "send" },
      ],
      ["the quorum wait is over: send", accept, { quorumWaitMs: 5_000, nowMs: 5_000 }, { action: "send" }],
      ["no quorum wait: send", accept, {}, { action: "send" }],
      [
        "a verdict is held by neither claims nor silence",
        verdict(1, "1", 9_000, hex("e1")).decision,
        {
          job: { ...running, acceptedStep: 100, acceptedHash: hex("44"), pendingStep: 0 },
          pool: poolOf(claimBy2),
          quorumWaitMs: 5_000,
        },
        { action: "send" },
      ],
      [
        "a verdict before the last step is accepted: wait for the chain",
        verdict(1, "1", 9_000, hex("e1")).decision,
        {},
        { action: "wait", on: "chain" },
      ],
    ];
    for (const [name, d, over, expected] of rows) {
      it(name, function () {
        expect(nextStep(d, base(over))).to.include(expected);
      });
    }
  });
});
