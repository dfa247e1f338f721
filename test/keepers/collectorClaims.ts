/**
 * The collector's fault-claim rules, pure (keepers/collector/decide.ts): parsing claims and "not reproduced"
 * checks, the escrow call a fault refusal becomes, and the hold on a checkpoint's plain decisions with its bound.
 */
import { expect } from "chai";
import { getAddress } from "ethers";
import {
  addSignature,
  decisionCall,
  holdReason,
  parseCheck,
  parseSubmission,
  type ClaimState,
  type Pool,
  type Submission,
  type VerifierDecision,
} from "../../keepers/collector/decide.ts";

const addr = (n: number) => getAddress("0x" + n.toString(16).padStart(40, "0"));
const hex = (b: string) => "0x" + b.repeat(32);
const SIG = "0x" + "33".repeat(65);
const AT = { jobId: "1", epoch: "2", step: 10, checkpointHash: hex("22") };
const FAULT = { step: 7, inputHash: hex("a1"), committedHash: hex("a2"), replayedHash: hex("a3"), finder: addr(1) };

const faultBody = (signer: string, over: Record<string, unknown> = {}, digest = hex("f1")) => ({
  kind: "fault",
  message: { ...AT, fault: { ...FAULT, ...over } },
  digest,
  signer,
  signature: SIG,
});
const checkBody = (signer: string, over: Record<string, unknown> = {}) => ({
  kind: "check",
  message: { ...AT, claimDigest: hex("f1"), reproduced: false, ...over },
  digest: hex("c1"),
  signer,
  signature: SIG,
});

describe("keepers: collector fault claims (pure)", function () {
  it("parses a claim and a 'not reproduced' check, and rejects malformed ones with a reason", function () {
    const s = parseSubmission(faultBody(addr(1))) as Submission;
    expect(s.decision).to.deep.equal({
      kind: "fault",
      message: { jobId: 1n, epoch: 2n, step: 10, checkpointHash: hex("22"), fault: FAULT },
    });
    expect(parseSubmission(faultBody(addr(1), { step: 0 }))).to.equal("message.fault.step must be a uint32 above 0");
    expect(parseSubmission(faultBody(addr(1), { finder: "x" }))).to.equal("message.fault.finder is not an address");
    expect(parseSubmission(faultBody(addr(1), { replayedHash: "0x12" }))).to.equal(
      "message.fault.replayedHash must be 32 bytes of hex",
    );
    const c = parseCheck(checkBody(addr(2)));
    expect(c).to.deep.include({ signer: addr(2), digest: hex("c1") });
    expect(parseCheck(checkBody(addr(2), { reproduced: true }))).to.be.a("string");
    expect(parseCheck(checkBody(addr(2), { claimDigest: "0x1" }))).to.equal(
      "message.claimDigest must be 32 bytes of hex",
    );
    expect(parseCheck(faultBody(addr(2)))).to.equal('kind must be "check"');
  });

  it("a fault refusal becomes refuseWithFault with the fault as the struct", function () {
    const d = (parseSubmission(faultBody(addr(1))) as Submission).decision;
    expect(decisionCall(d, "0xab")).to.deep.equal({
      method: "refuseWithFault",
      args: [1n, 2n, 10, hex("22"), FAULT, "0xab"],
    });
  });

  describe("the hold on a checkpoint's plain decisions", function () {
    const owners = new Set([1, 2, 3].map((n) => addr(n).toLowerCase()));
    const accept: VerifierDecision = {
      kind: "checkpoint",
      message: { jobId: 1n, epoch: 2n, step: 10, checkpointHash: hex("22"), accept: true },
    };
    const HOLD = 60_000;
    const SEEN = 1_000;

    /** The claim by verifier 1, signed also by `confirmedBy`, answered "not reproduced" by `notReproducedBy`. */
    function claim(confirmedBy: number[] = [], notReproducedBy: number[] = [], over: Record<string, unknown> = {}) {
      const pool: Pool = new Map();
      for (const n of [1, ...confirmedBy]) addSignature(pool, parseSubmission(faultBody(addr(n), over)) as Submission);
      const entry = [...pool.values()][0];
      const notReproduced = new Set(notReproducedBy.map((n) => addr(n).toLowerCase()));
      return [{ entry, firstSeenMs: SEEN, notReproduced }] as ClaimState[];
    }
    const hold = (claims: ClaimState[], now = SEEN) => holdReason(accept, claims, owners, 2, now, HOLD);

    it("holds while another owner has not answered the claim", function () {
      expect(hold(claim())).to.match(/unchecked by/);
      expect(hold(claim([], [2]))).to.match(new RegExp(`unchecked by ${addr(3).toLowerCase()}`));
    });

    it("releases once every other owner answered 'not reproduced'", function () {
      expect(hold(claim([], [2, 3]))).to.equal(undefined);
    });

    it("holds while a fault refusal of the checkpoint has its threshold (it goes first)", function () {
      expect(hold(claim([2], [3]))).to.equal("a fault refusal of this checkpoint goes first");
    });

    it("is bounded: held at holdMs − 1 after the claim was first seen, released at holdMs and after", function () {
      expect(hold(claim(), SEEN + HOLD - 1)).to.match(/unchecked/);
      expect(hold(claim(), SEEN + HOLD)).to.equal(undefined);
      expect(hold(claim(), SEEN + HOLD + 1)).to.equal(undefined);
    });

    it("a claim on another checkpoint, and verdicts, hold nothing", function () {
      const other = claim();
      (other[0].entry.decision.message as { step: number }).step = 20;
      expect(hold(other)).to.equal(undefined);
      const verdict: VerifierDecision = {
        kind: "verdict",
        message: { jobId: 1n, modelHash: hex("44"), metric: 1n, passed: true },
      };
      expect(holdReason(verdict, claim(), owners, 2, SEEN, HOLD)).to.equal(undefined);
    });

    it("an ex-owner's silence holds nothing: only current owners must answer", function () {
      const fewer = new Set([1, 2].map((n) => addr(n).toLowerCase()));
      expect(holdReason(accept, claim([], [2]), fewer, 2, SEEN, HOLD)).to.equal(undefined);
    });
  });
});
