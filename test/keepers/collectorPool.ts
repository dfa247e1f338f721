/**
 * The collector's pool as one value (keepers/collector/pool.ts), pure: `accept` (a signed post arrives), `acceptCheck`
 * (a "not reproduced" answer), `observe` (owners, the job count, pooled jobs at the head and below it), `check` (what
 * to do with one digest now, given its job as just read) and `settled` (a decision landed). No chain, no clock, no
 * file: every time is passed in, so the boundaries are exact (t − 1, t, t + 1 ms). The same rules on the real chain,
 * Safe and HTTP: test/keepers/collector.ts, test/adversary/collectorHold.ts, test/keepers/collectorReorg.ts.
 */
import { expect } from "chai";
import { getAddress } from "ethers";
import {
  parseCheck,
  parseSubmission,
  SILENCE_DEFAULTS,
  type CheckSubmission,
  type JobState,
  type Submission,
} from "../../keepers/collector/decide.ts";
import {
  accept,
  acceptCheck,
  check,
  emptyPool,
  observe,
  RECHECK_MS,
  RETRY_AFTER_MS,
  sendFailed,
  settled,
  silentNow,
  wantsConfirmed,
  type JobAt,
  type PoolRules,
  type PoolState,
} from "../../keepers/collector/pool.ts";

const addr = (n: number) => getAddress("0x" + n.toString(16).padStart(40, "0"));
const low = (n: number) => addr(n).toLowerCase();
const hex = (b: string) => "0x" + b.repeat(32);
const SIG = "0x" + "33".repeat(65);
const AT = { jobId: "1", epoch: "2", step: 10, checkpointHash: hex("22") };
const FAULT = { step: 7, inputHash: hex("a1"), committedHash: hex("a2"), replayedHash: hex("a3") };
const ACCEPT = hex("a0");
const T0 = 1_000_000;

function plain(signer: number, at: Record<string, unknown> = {}, digest = ACCEPT): Submission {
  const body = { kind: "checkpoint", message: { ...AT, ...at, accept: true }, digest };
  return parseSubmission({ ...body, signer: addr(signer), signature: SIG }) as Submission;
}
function fault(signer: number, finder: number, digest = hex("f1")): Submission {
  const message = { ...AT, fault: { ...FAULT, finder: addr(finder) } };
  return parseSubmission({ kind: "fault", message, digest, signer: addr(signer), signature: SIG }) as Submission;
}
function notReproduced(signer: number, claimDigest = hex("f1")): CheckSubmission {
  const message = { ...AT, claimDigest, reproduced: false };
  return parseCheck({
    kind: "check",
    message,
    digest: hex("c" + signer),
    signer: addr(signer),
    signature: SIG,
  }) as CheckSubmission;
}
/** Job 1 while AT's checkpoint is pending (reported at 1 000 s, read at 1 100 s). */
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
const PENDING: JobAt = { job: RUNNING, chainTimeS: 1_100n };
/** The same job once AT's checkpoint was accepted. */
const DECIDED: JobAt = {
  job: { ...RUNNING, acceptedStep: 10, acceptedHash: hex("22"), pendingStep: 0, pendingHash: hex("00") },
  chainTimeS: 1_100n,
};
const RULES: PoolRules = { holdMs: 120_000, quorumWaitMs: 15_000, silence: SILENCE_DEFAULTS, depth: 0 };

/** A pool that observed owners 1, 2, 3 (threshold 2). */
function owned(): PoolState {
  const owners = { list: [1, 2, 3].map(addr), threshold: 2 };
  return observe(emptyPool(T0), { owners }, { nowMs: T0, depth: 0 }).state;
}
/** `subs` accepted in order at `nowMs`. */
function withAll(state: PoolState, nowMs: number, ...subs: Submission[]): PoolState {
  for (const s of subs) state = accept(state, s, { nowMs }).state;
  return state;
}
/** check with the job read as `head` (and `confirmed`), at `nowMs`. */
const checkAt = (state: PoolState, nowMs: number, head = PENDING, rules = RULES, confirmed?: JobAt) =>
  check(state, ACCEPT, rules, { nowMs, head, confirmed });

describe("keepers: the collector's pool (pure transitions)", function () {
  describe("accept", function () {
    it("pools a verified signature by a current owner, counts a re-send once, and never changes the state it is given", function () {
      const s0 = owned();
      const a = accept(s0, plain(1), { nowMs: T0 });
      expect(a.answer).to.deep.equal({
        status: 200,
        body: { ok: true, digest: ACCEPT, signatures: 1, threshold: 2, state: "pending" },
      });
      expect([a.added, a.kick]).to.deep.equal([true, []]);
      expect(s0.entries.size, "the given state is unchanged").to.equal(0);
      const again = accept(a.state, plain(1), { nowMs: T0 + 1 });
      expect([again.added, again.count, again.kick]).to.deep.equal([false, 1, []]);
      const second = accept(again.state, plain(2), { nowMs: T0 + 2 });
      expect([second.count, second.kick], "the threshold: processed now").to.deep.equal([2, [ACCEPT]]);
      expect(a.state.entries.get(ACCEPT)!.signatures.size, "earlier states keep their own entries").to.equal(1);
    });

    it("answers 400 for a wrong digest or signature and for a signer that is not an owner; 409 for a second claim", function () {
      const s = owned();
      expect(accept(s, plain(1), { nowMs: T0, wrong: "malformed signature" }).answer.status).to.equal(400);
      const outsider = accept(s, plain(9), { nowMs: T0 });
      expect(outsider.answer).to.deep.equal({
        status: 400,
        body: { ok: false, reason: `${addr(9)} is not an owner of the verifier Safe` },
      });
      expect(outsider.state.entries.size).to.equal(0);
      const claimed = withAll(s, T0, fault(1, 1));
      const second = accept(claimed, fault(1, 77, hex("f2")), { nowMs: T0 });
      expect(second.answer.status).to.equal(409);
      expect(second.state.entries.has(hex("f2"))).to.equal(false);
    });

    it("before the owners were ever observed it pools any verified signer (no chain read in a POST); the first observation drops non-owners", function () {
      let s = emptyPool(T0);
      s = withAll(s, T0, plain(1), plain(9), plain(9, {}, hex("b0")));
      expect(s.entries.size).to.equal(2);
      s = observe(s, { owners: { list: [1, 2, 3].map(addr), threshold: 2 } }, { nowMs: T0, depth: 0 }).state;
      expect([...s.entries.keys()], "the outsider-only entry left").to.deep.equal([ACCEPT]);
      expect([...s.entries.get(ACCEPT)!.signatures.keys()]).to.deep.equal([low(1)]);
      expect(accept(s, plain(9), { nowMs: T0 }).answer.status, "observed now: a 400").to.equal(400);
    });

    it("a fault refusal processes its whole job (a claim may hold or release); restoring processes nothing", function () {
      const a = accept(owned(), fault(1, 1), { nowMs: T0 });
      expect(a.kickJob).to.equal(1n);
      const r = accept(withAll(owned(), T0, plain(1)), plain(2), { nowMs: T0, restoring: true });
      expect([r.added, r.kick, r.kickJob]).to.deep.equal([true, [], undefined]);
    });
  });

  describe("done digests and re-posts (reorganisations, without a chain read in the POST)", function () {
    const decidedAt = T0 + 5_000;
    const decided = () => settled(withAll(owned(), T0, plain(1), plain(2)), ACCEPT, decidedAt);

    it(`a re-post less than ${RECHECK_MS} ms after the chain last showed it decided is "done"; at ${RECHECK_MS} ms and later it is pooled again`, function () {
      const s = decided();
      const at = (dt: number) => accept(s, plain(3), { nowMs: decidedAt + dt });
      expect(at(RECHECK_MS - 1).answer.body.state, "t − 1").to.equal("done");
      expect(at(RECHECK_MS - 1).state.entries.size).to.equal(0);
      for (const dt of [RECHECK_MS, RECHECK_MS + 1]) {
        const r = at(dt);
        expect(r.answer.body.state, `t${dt === RECHECK_MS ? "" : " + 1"}`).to.equal("pending");
        expect(r.state.done.has(ACCEPT)).to.equal(false);
        expect(r.state.rechecking.has(ACCEPT)).to.equal(true);
      }
    });

    it("a done re-post by a non-owner, with a bad signature, or while restoring stays done; an owner's is still its word", function () {
      const s = decided();
      const later = decidedAt + 10_000;
      expect(accept(s, plain(9), { nowMs: later }).answer.body.state).to.equal("done");
      expect(accept(s, plain(3), { nowMs: later, wrong: "malformed signature" }).answer.body.state).to.equal("done");
      expect(accept(s, plain(3), { nowMs: later, restoring: true }).answer.body.state).to.equal("done");
      const early = accept(s, plain(3), { nowMs: decidedAt + 1 });
      expect(early.state.words.get(low(3))).to.deep.equal({ atMs: decidedAt + 1, decided: 0 });
    });

    it("pooled again: still decided on chain, it is dropped and done again (from that look); pending again, it is reported once and sent", function () {
      const again = accept(decided(), plain(3), { nowMs: decidedAt + RECHECK_MS }).state;
      const withSecond = accept(again, plain(2), { nowMs: decidedAt + RECHECK_MS }).state;
      const still = checkAt(withSecond, decidedAt + 2_000, DECIDED);
      expect(still.check).to.deep.include({ action: "dropped", remember: true });
      expect(still.state.done.get(ACCEPT)).to.equal(decidedAt + 2_000);
      const reorged = checkAt(withSecond, decidedAt + 2_000, PENDING, { ...RULES, quorumWaitMs: 0 });
      expect([reorged.check.action, reorged.pendingAgain]).to.deep.equal(["send", true]);
      expect(reorged.state.rechecking.size).to.equal(0);
    });
  });

  describe("check", function () {
    it("asks for the job at the head only once the threshold is there, then decides; a send is the packed escrow call", function () {
      const one = withAll(owned(), T0, plain(1));
      expect(check(one, ACCEPT, RULES, { nowMs: T0 }).check).to.deep.equal({ action: "unsigned" });
      const two = withAll(owned(), T0, plain(1), plain(2), plain(3));
      expect(check(two, ACCEPT, RULES, { nowMs: T0 }).check).to.deep.equal({ action: "read", depth: 0 });
      const sent = checkAt(two, T0).check;
      expect(sent).to.deep.include({ action: "send", signers: [addr(1), addr(2)] });
      expect(sent.action === "send" && sent.call.method).to.equal("acceptCheckpoint");
      expect(check(two, hex("99"), RULES, { nowMs: T0 }).check).to.deep.equal({ action: "gone" });
    });

    it("the quorum wait for a silent owner: held at t − 1 from the first applicable check with the threshold, sent at t and t + 1", function () {
      const first = checkAt(withAll(owned(), T0, plain(1), plain(2)), T0);
      expect(first.check).to.deep.include({ action: "wait", on: "owner" });
      const s = first.state;
      expect(s.readySince.get(ACCEPT)).to.equal(T0);
      expect(checkAt(s, T0 + 15_000 - 1).check).to.deep.include({ action: "wait", on: "owner" });
      expect(checkAt(s, T0 + 15_000).check.action, "t").to.equal("send");
      expect(checkAt(s, T0 + 15_000 + 1).check.action, "t + 1").to.equal("send");
      expect(checkAt(accept(s, plain(3), { nowMs: T0 + 1 }).state, T0 + 1).check.action, "all spoke").to.equal("send");
    });

    it("the claim hold: held at t − 1 after the claim was first seen, sent at t and t + 1; released at once when answered", function () {
      const claimAt = T0 + 100;
      let s = withAll(owned(), T0, plain(2), plain(3));
      s = accept(s, fault(1, 1), { nowMs: claimAt }).state;
      expect(s.claimSeen.get(hex("f1"))).to.equal(claimAt);
      const rules = { ...RULES, quorumWaitMs: 0 };
      // The hold clock is the checkpoint's: the earlier of the claim and the plain decision's threshold (first check).
      expect(checkAt(s, claimAt + 120_000 - 1, PENDING, rules).check).to.deep.include({ action: "wait", on: "claim" });
      expect(checkAt(s, claimAt + 120_000, PENDING, rules).check.action, "t").to.equal("send");
      expect(checkAt(s, claimAt + 120_000 + 1, PENDING, rules).check.action, "t + 1").to.equal("send");
      for (const w of [2, 3]) s = acceptCheck(s, notReproduced(w), { nowMs: claimAt + 1 }).state;
      expect(checkAt(s, claimAt + 1, PENDING, rules).check.action, "both answered").to.equal("send");
    });

    it("a plain decision's threshold starts the hold clock before any claim: claims after it cannot extend it", function () {
      const rules = { ...RULES, quorumWaitMs: 0 };
      let s = checkAt(withAll(owned(), T0, plain(2), plain(3)), T0, PENDING, rules).state; // the clock starts at T0
      s = accept(s, fault(1, 1), { nowMs: T0 + 50_000 }).state;
      expect(checkAt(s, T0 + 120_000 - 1, PENDING, rules).check).to.deep.include({ on: "claim" });
      expect(checkAt(s, T0 + 120_000, PENDING, rules).check.action).to.equal("send");
    });

    it("drops what is decided (remembered as done, checkpoint counted decided once seen pending) and waits for a checkpoint not reported yet", function () {
      const s = checkAt(withAll(owned(), T0, plain(1), plain(2), plain(3)), T0).state; // seen pending
      const d = checkAt(s, T0 + 1, DECIDED);
      expect(d.check).to.deep.include({ action: "dropped", remember: true });
      expect([d.state.entries.size, d.state.done.has(ACCEPT), d.state.decided]).to.deep.equal([0, true, 1]);
      const notYet = { job: { ...RUNNING, pendingStep: 0, pendingHash: hex("00") }, chainTimeS: 1_100n };
      expect(checkAt(s, T0 + 1, notYet).check).to.deep.include({ action: "wait", on: "chain" });
    });

    it("with confirmations: asks for the job below the head, waits while it does not call for the decision, keeps a decided one until confirmed", function () {
      const rules = { ...RULES, quorumWaitMs: 0, depth: 2 };
      const s = withAll(owned(), T0, plain(1), plain(2));
      expect(checkAt(s, T0, PENDING, rules).check).to.deep.equal({ action: "read", depth: 2 });
      const notReported = { job: { ...RUNNING, pendingStep: 0, pendingHash: hex("00") }, chainTimeS: 1_000n };
      expect(checkAt(s, T0, PENDING, rules, notReported).check).to.deep.include({ on: "confirmations" });
      expect(checkAt(s, T0, PENDING, rules, PENDING).check.action).to.equal("send");
      expect(checkAt(s, T0, DECIDED, rules).check).to.deep.equal({ action: "read", depth: 2 });
      expect(checkAt(s, T0, DECIDED, rules, PENDING).check).to.deep.include({ action: "wait", on: "unconfirmed" });
      expect(checkAt(s, T0, DECIDED, rules, DECIDED).check.action).to.equal("dropped");
    });

    it(`a failed send is not tried again before ${RETRY_AFTER_MS} ms: t − 1 retry later, t checked again`, function () {
      const s = sendFailed(withAll(owned(), T0, plain(1), plain(2), plain(3)), ACCEPT, T0);
      expect(checkAt(s, T0 + RETRY_AFTER_MS - 1).check.action).to.equal("retry later");
      expect(checkAt(s, T0 + RETRY_AFTER_MS).check.action).to.equal("send");
    });
  });

  describe("observe and settled", function () {
    it("drops entries about jobs above the job count (forgotten), decided ones (done) and unreported ones (forgotten); keeps the pending", function () {
      let s = withAll(owned(), T0, plain(1), plain(1, { jobId: "7" }, hex("b7")), plain(1, { step: 20 }, hex("b2")));
      s = withAll(s, T0, plain(1, { jobId: "2" }, hex("c2")));
      const jobs = new Map([
        [1n, { head: PENDING }],
        [2n, { head: DECIDED }],
      ]);
      const seen = observe(s, { jobCount: 5n, jobs }, { nowMs: T0, depth: 0 });
      const why = Object.fromEntries(seen.dropped.map((d) => [d.entry.digest, d.why]));
      expect(why).to.deep.equal({ [hex("b7")]: "no job", [hex("b2")]: "forget", [hex("c2")]: "done" });
      expect([...seen.state.entries.keys()]).to.deep.equal([ACCEPT]);
      expect([...seen.state.done.keys()]).to.deep.equal([hex("c2")]);
      const skipped = observe(s, { jobCount: 5n, jobs }, { nowMs: T0, depth: 0, skip: new Set([hex("c2")]) });
      expect(skipped.state.entries.has(hex("c2")), "being sent: left to its send").to.equal(true);
    });

    it("with confirmations a decided entry stays until the block below the head shows it decided (unreadable: stays)", function () {
      const s = withAll(owned(), T0, plain(1));
      const rules = { ...RULES, depth: 2 };
      expect(wantsConfirmed(s, 1n, DECIDED, rules)).to.equal(true);
      expect(wantsConfirmed(s, 1n, PENDING, rules)).to.equal(false);
      const o = { nowMs: T0, depth: 2 };
      const obs = (confirmed?: JobAt) => observe(s, { jobs: new Map([[1n, { head: DECIDED, confirmed }]]) }, o);
      expect(obs(undefined).state.entries.size, "unreadable").to.equal(1);
      expect(obs(PENDING).state.entries.size, "pending below").to.equal(1);
      expect(obs(DECIDED).state.entries.size, "decided below").to.equal(0);
    });

    it("settled remembers the digest and counts a checkpoint seen pending as decided: an owner silent for 3 of them and 60 s is silent", function () {
      let s = owned();
      let now = T0;
      for (const step of [10, 20, 30]) {
        const digest = hex(String(step));
        s = withAll(s, now, plain(1, { step }, digest), plain(2, { step }, digest));
        const pending = { job: { ...RUNNING, pendingStep: step, pendingHash: hex("22") }, chainTimeS: 1_100n };
        s = check(s, digest, RULES, { nowMs: now, head: pending }).state; // seen pending
        s = settled(s, digest, now);
        now += 20_000;
      }
      expect(s.decided).to.equal(3);
      expect([...silentNow(s, T0 + 60_000 - 1, RULES.silence)], "60 s − 1").to.deep.equal([]);
      expect([...silentNow(s, T0 + 60_000, RULES.silence)], "owner 3 never spoke").to.deep.equal([low(3)]);
      const back = accept(s, plain(3, { step: 40 }, hex("40")), { nowMs: T0 + 60_000 }).state;
      expect(silentNow(back, T0 + 60_000, RULES.silence).size, "its next word ends it").to.equal(0);
      expect(settled(s, hex("99"), now).decided, "settling what is not pooled counts nothing").to.equal(3);
    });
  });
});
