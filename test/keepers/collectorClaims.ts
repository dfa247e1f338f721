/**
 * The collector's fault-claim rules, pure (keepers/collector/decide.ts): parsing claims and "not reproduced"
 * checks, the escrow call a fault refusal becomes, and the hold on a checkpoint's plain decisions with its bound;
 * then `POST /claims` fuzzed against the simulated chain (the end-to-end flow is in test/verifier/claims.ts).
 */
import { expect } from "chai";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { getAddress, type HDNodeWallet } from "ethers";
import { createCollector } from "../../keepers/collector/tick.ts";
import { claimCheckDigest, faultRefusalDigest, signAsSafeOwner } from "../../sdk/rules/verifierSignatures.ts";
import { ckpt, createJob, domainOf, load, testContext, wallet } from "./fixture.ts";
import {
  addSignature,
  decisionCall,
  holdReason,
  parseCheck,
  parseSubmission,
  silenceReason,
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

describe("keepers: collector waits for the silent owner before a plain decision (pure)", function () {
  const owners = new Set([1, 2, 3].map((n) => addr(n).toLowerCase()));
  const acceptBody = (signer: string) => ({
    kind: "checkpoint",
    message: { ...AT, accept: true },
    digest: hex("a0"),
    signer,
    signature: SIG,
  });
  const pool = (...bodies: unknown[]) => {
    const p: Pool = new Map();
    for (const b of bodies) addSignature(p, parseSubmission(b) as Submission);
    return p;
  };
  const accept = (parseSubmission(acceptBody(addr(1))) as Submission).decision;
  const WAIT = 15_000;

  it("waits while an owner signed nothing on the checkpoint, for waitMs and no longer (t−1 held, t sent)", function () {
    const p = pool(acceptBody(addr(1)), acceptBody(addr(2)));
    expect(silenceReason(accept, p, owners, 0, 0, WAIT)).to.contain(addr(3).toLowerCase());
    expect(silenceReason(accept, p, owners, 0, WAIT - 1, WAIT)).to.be.a("string");
    expect(silenceReason(accept, p, owners, 0, WAIT, WAIT)).to.equal(undefined);
    expect(silenceReason(accept, p, owners, 0, 0, 0), "no wait configured").to.equal(undefined);
  });

  it("a claim is a word: the third owner's fault refusal ends the wait (the claim's hold takes over)", function () {
    const p = pool(acceptBody(addr(1)), acceptBody(addr(2)), faultBody(addr(3), { finder: addr(3) }));
    expect(silenceReason(accept, p, owners, 0, 0, WAIT)).to.equal(undefined);
    const elsewhere = pool(acceptBody(addr(1)), acceptBody(addr(2)), {
      ...faultBody(addr(3), { finder: addr(3) }),
      message: { ...AT, step: 20, fault: { ...FAULT, finder: addr(3) } },
    });
    expect(silenceReason(accept, elsewhere, owners, 0, 0, WAIT), "a word on another checkpoint").to.be.a("string");
  });
});

describe("keepers: collector POST /claims on chain: malformed, foreign and forged bodies are 4xx and store nothing", function () {
  const JUNK: unknown[] = [null, true, -1, 1.5, 2 ** 53, "", "x", "-1", "0x", "0xzz", [], {}, "0x" + "00".repeat(20)];

  it("fuzzes a valid claim and a valid check field by field (seeded): never a 5xx, nothing pooled", async function () {
    const p = await load();
    const jobId = await createJob(p);
    await p.escrow.connect(p.coordinator).assign(jobId, p.provider1.address);
    const hash = ckpt(jobId, 10);
    await p.escrow.connect(p.provider1).reportCheckpoint(jobId, 1n, 10, hash);
    const stateFile = path.join(mkdtempSync(path.join(tmpdir(), "gpuchain-claims-fuzz-")), "state.json");
    const { ctx } = await testContext(p, { signer: p.stranger, component: "collector" });
    const collector = createCollector(
      ctx,
      { stateFile, dryRun: true },
      { safeAddress: p.deployment.verifierSafe, escrowAddress: p.deployment.escrow },
    );
    await collector.restore();
    const domain = domainOf(p);
    const [v1, v2] = [wallet(3), wallet(4)];
    const sign = (w: HDNodeWallet, digest: string) => signAsSafeOwner(w, p.chainId, p.deployment.verifierSafe, digest);
    const at = { jobId, epoch: 1n, step: 10, checkpointHash: hash };
    const fault = { ...FAULT, finder: v1.address };
    const claimDigest = faultRefusalDigest(domain, { ...at, fault });
    const json = { jobId: jobId.toString(), epoch: "1", step: 10, checkpointHash: hash };
    const claim = { kind: "fault", message: { ...json, fault }, digest: claimDigest, signer: v1.address };
    const validClaim = { ...claim, signature: await sign(v1, claimDigest) };
    const checkDigest = claimCheckDigest(domain, { ...at, claimDigest, reproduced: false });
    const check = { kind: "check", message: { ...json, claimDigest, reproduced: false }, digest: checkDigest };
    const validCheck = { ...check, signer: v2.address, signature: await sign(v2, checkDigest) };
    const submit = (b: unknown) => collector.submitClaim(JSON.parse(JSON.stringify(b)));
    // A check for a claim that is not pending yet: 400, nothing stored.
    expect((await submit(validCheck)).status).to.equal(400);
    let seed = 7;
    const rnd = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
    const mutate = (valid: Record<string, unknown>, inner: string[]) => {
      const v = JUNK[Math.floor(rnd() * JUNK.length)];
      const top = ["kind", "digest", "signer", "signature", "message"];
      const m = valid.message as Record<string, unknown>;
      if (rnd() < 0.4) return { ...valid, [top[Math.floor(rnd() * top.length)]]: v };
      const k = inner[Math.floor(rnd() * inner.length)];
      if (k.startsWith("fault.")) return { ...valid, message: { ...m, fault: { ...fault, [k.slice(6)]: v } } };
      return { ...valid, message: { ...m, [k]: v } };
    };
    const claimFields = [
      "jobId",
      "epoch",
      "step",
      "checkpointHash",
      "fault",
      ...Object.keys(fault).map((k) => `fault.${k}`),
    ];
    for (let i = 0; i < 150; i++) {
      const r = await submit(mutate(validClaim, claimFields));
      expect(r.status, `claim mutation ${i}: ${JSON.stringify(r.body)}`).to.be.within(400, 499);
    }
    expect(collector.pool.size, "no claim pooled").to.equal(0);
    expect((await submit(validClaim)).status).to.equal(200);
    expect((await submit(validClaim)).status).to.equal(200); // re-sent every tick: counted once
    expect([...collector.pool.values()][0].signatures.size).to.equal(1);
    const checkFields = ["jobId", "epoch", "step", "checkpointHash", "claimDigest", "reproduced"];
    for (let i = 0; i < 150; i++) {
      const r = await submit(mutate(validCheck, checkFields));
      expect(r.status, `check mutation ${i}: ${JSON.stringify(r.body)}`).to.be.within(400, 499);
    }
    expect((await submit({ ...validCheck, signer: v1.address })).status, "v2's signature as v1's").to.equal(400);
    expect((await submit(validCheck)).body).to.deep.include({ state: "checked" });
    expect(collector.pool.size).to.equal(1);
    await collector.idle();
  });
});
