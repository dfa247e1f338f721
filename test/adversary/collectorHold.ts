/**
 * "One verifier freezes every acceptance" and its twin, "one verifier key grows the pool without bound"
 * (THREATS.md, "One malicious verifier of three"): one malicious Safe owner (verifier 1, Hardhat account 3) against the
 * real verdict collector (keepers/collector/tick.ts over HTTP), on the simulated chain with the Ignition deployment and
 * a real 2-of-3 Safe v1.4.1. The two honest owners (accounts 4 and 5) post what verifiers post (verifier/work.ts
 * bodies, signed with sdk/rules/verifierSignatures.ts): their accept, re-sent, and nothing else (the worst case for the hold:
 * they cannot answer a claim, e.g. their store is down). One `it` per strategy:
 *
 * (a) a FaultRefusal signed by the malicious owner naming a fresh random finder every claimHoldMs/4, after a claim
 *     of its own: the honest accept lands within claimHoldMs of the first claim (control: without the attack it
 *     lands after the quorum wait for the silent third owner); and at the defaults, on a manual clock, the worst
 *     it can do is max(claimHoldMs, quorumWaitMs) = 120 s after the honest threshold: held at t − 1, sent at t;
 * (b) a second claim by the same owner (another finder, another fault) is a 409, not pooled, not listed, while an
 *     honest owner's confirmation of another owner's claim still counts and slashes;
 * (c) entries for checkpoints that are not pending on chain (decided, lapsed, never reported, never existed, no
 *     such job) leave the pool, the state file and GET /claims at the next tick;
 * (d) an owner that is merely down stops costing each checkpoint the quorum wait once it is silent by the rule
 *     (3 decided checkpoints and 60 s without a word), and is waited for again the moment it posts;
 * (e) a co-signature with a v the escrow refuses (0/1, EIP-155 style) but ethers recovers, packed with an honest
 *     one, made every decision revert: it is re-encoded (v = 27/28) when it arrives.
 */
import { expect } from "chai";
import { readFileSync } from "node:fs";
import { Wallet, hexlify, randomBytes } from "ethers";
import { ckpt, createJob, load, manualClock, networkHelpers, type Protocol } from "../keepers/fixture.ts";
import {
  acceptBody,
  accepted,
  checkBody,
  faultBody,
  faultOf,
  Host,
  reported,
  sleep,
  V1,
  V2,
  V3,
} from "./collectorHost.ts";

const savedPending = (file: string) => (JSON.parse(readFileSync(file, "utf8")) as { pending: unknown[] }).pending;

describe("adversary: one malicious verifier cannot hold a checkpoint beyond the bound", function () {
  this.timeout(120_000);
  const hosts: Host[] = [];
  afterEach(async () => {
    while (hosts.length) await hosts.pop()!.stop();
  });
  /** A collector host for this test, stopped after it. */
  const started = async (...args: Parameters<typeof Host.start>): Promise<Host> => {
    const host = await Host.start(...args);
    hosts.push(host);
    return host;
  };

  it("(a) finder-spoofed refusals with a fresh finder every claimHoldMs/4 hold an honest accept claimHoldMs at most (real time); controls: no attack, and its own claim answered", async function () {
    const HOLD = 2_000;
    const WAIT = 1_000;
    const SLACK = 1_000; // collector ticks (50 ms apart), the send, and a busy machine
    // "none": no attack (control); "answered": its own claim, which the honest owners answer "not reproduced", then
    // the spoofs (control for the hold itself); "unanswered": the same, but the honest owners cannot answer.
    for (const mode of ["none", "answered", "unanswered"] as const) {
      const p = await load();
      const c = await reported(p);
      const host = await started(p, { claimHoldMs: HOLD, quorumWaitMs: WAIT });
      host.tickEvery(50);
      const spoofs: { digest: string; status: number; reason?: unknown }[] = [];
      let attacking = mode !== "none";
      let firstClaimAt = Infinity;
      const attacker = (async () => {
        if (!attacking) return;
        // Its own claim first (its one claim on this checkpoint) ...
        const own = await host.post("/claims", await faultBody(p, V1, c, faultOf(c, V1.address)));
        expect(own.status, JSON.stringify(own.body)).to.equal(200);
        firstClaimAt = Date.now();
        // ... then a FaultRefusal naming a fresh random finder every HOLD/4 for as long as the test runs.
        while (attacking) {
          const body = await faultBody(p, V1, c, faultOf(c, Wallet.createRandom().address));
          const r = await host.post("/claims", body);
          spoofs.push({ digest: body.digest, status: r.status, reason: r.body.reason });
          await sleep(HOLD / 4);
        }
      })();
      await sleep(200);
      // The honest pair signs accept: 2 of 3 (the quorum wait runs from here). With a claims view they answer each
      // listed claim of another owner "not reproduced" (what verifier.ts does after one step's replay of it).
      for (const w of [V2, V3])
        expect((await host.post("/signatures", await acceptBody(p, w, c))).status).to.equal(200);
      const thresholdAt = Date.now();
      if (mode === "answered")
        for (const w of [V2, V3])
          for (const claim of await host.claims())
            expect((await host.post("/claims", await checkBody(p, w, c, claim.digest))).status).to.equal(200);
      const deadline = thresholdAt + 3 * HOLD;
      let acceptedAt = Infinity;
      while (Date.now() < deadline) {
        if (await accepted(p, c)) {
          acceptedAt = Date.now();
          break;
        }
        await sleep(25);
      }
      const listed = (await host.claims()).map((x) => x.digest);
      attacking = false;
      await attacker;
      const delay = acceptedAt - thresholdAt;
      if (process.env.COLLECTOR_HOLD_DELAYS)
        console.log(`${mode}: accepted ${delay} ms after the 2 of 3 (hold ${HOLD} ms, wait ${WAIT} ms)`);
      expect(acceptedAt, `${mode}: accepted while the attack went on (${spoofs.length} spoofs)`).to.be.lessThan(
        Infinity,
      );
      if (mode === "none") {
        expect(delay, "control: after the quorum wait for the silent owner").to.be.within(WAIT - 100, WAIT + SLACK);
        continue;
      }
      if (mode === "answered") expect(delay, "answered: released at once").to.be.at.most(HOLD / 2);
      expect(acceptedAt - firstClaimAt, "within claimHoldMs of the first claim").to.be.at.most(HOLD + SLACK);
      expect(delay, "within max(claimHoldMs, quorumWaitMs) of the honest threshold").to.be.at.most(HOLD + SLACK);
      expect(spoofs.length).to.be.at.least(mode === "answered" ? 1 : 3);
      // While the checkpoint was pending each spoof was a second claim (409); after, pooled until the next prune.
      // None was ever a claim: none listed.
      for (const s of spoofs) {
        expect(s.status, String(s.reason)).to.be.oneOf([409, 200]);
        if (s.status === 409) expect(String(s.reason)).to.match(/already has a fault claim on this checkpoint/);
        expect(listed).to.not.include(s.digest);
      }
      expect(spoofs.filter((s) => s.status === 409).length).to.be.at.least(1);
    }
  });

  it("(a) at the defaults (manual clock) the worst one owner can do is max(claimHoldMs, quorumWaitMs) = 120 s after the honest threshold: t − 1 held, t sent", async function () {
    const p = await load();
    const c = await reported(p);
    const clock = manualClock();
    const host = await started(p, { clock, claimHoldMs: 120_000, quorumWaitMs: 15_000 });
    const t0 = clock.now();
    for (const w of [V2, V3]) await host.post("/signatures", await acceptBody(p, w, c)); // the honest threshold
    await host.tick();
    // The malicious owner's best timing: its own claim just before the quorum wait for it ends ...
    clock.set(t0 + 15_000 - 1);
    expect((await host.post("/claims", await faultBody(p, V1, c, faultOf(c, V1.address)))).status).to.equal(200);
    await host.tick();
    // ... then fresh finder-spoofed refusals every 100 s (each one held the checkpoint 120 s more before the fix).
    for (const at of [100_000, 119_000]) {
      clock.set(t0 + at);
      await host.post("/claims", await faultBody(p, V1, c, faultOf(c, Wallet.createRandom().address)));
      await host.tick();
      expect(await accepted(p, c), `held at ${at} ms`).to.equal(false);
    }
    clock.set(t0 + 120_000 - 1);
    await host.tick();
    expect(await accepted(p, c), "held at 120 s − 1 ms").to.equal(false);
    clock.set(t0 + 120_000);
    await host.tick();
    expect(await accepted(p, c), "sent at 120 s").to.equal(true);
  });

  it("(b) a second claim by the same owner with another finder (or another fault) is a 409, not pooled nor listed; an honest confirmation of another owner's claim still counts", async function () {
    const p = await load();
    const c = await reported(p);
    const host = await started(p, { claimHoldMs: 120_000 });
    const own = await faultBody(p, V1, c, faultOf(c, V1.address));
    expect((await host.post("/claims", own)).status).to.equal(200);
    const seconds = [
      await faultBody(p, V1, c, faultOf(c, Wallet.createRandom().address)), // a fresh random finder
      await faultBody(p, V1, c, faultOf(c, V2.address)), // naming an honest owner as finder
      await faultBody(p, V1, c, faultOf(c, V1.address, c.step - 1)), // its own, another fault step
    ];
    for (const body of seconds) {
      const r = await host.post("/claims", body);
      expect(r.status, JSON.stringify(r.body)).to.equal(409);
      expect(String(r.body.reason)).to.contain(`${V1.address} already has a fault claim on this checkpoint`);
      expect(host.collector.pool.has(body.digest), "not pooled").to.equal(false);
    }
    // A spoof first, then its own claim: the same one claim.
    const c2 = await reported(p, await createJobAssigned(p));
    expect(
      (await host.post("/claims", await faultBody(p, V1, c2, faultOf(c2, Wallet.createRandom().address)))).status,
    ).to.equal(200);
    expect((await host.post("/claims", await faultBody(p, V1, c2, faultOf(c2, V1.address)))).status).to.equal(409);
    expect((await host.claims()).map((x) => x.digest)).to.deep.equal([own.digest]);
    // V2 makes a claim of its own, then confirms V1's (same digest): a confirmation, not a second claim.
    expect((await host.post("/claims", await faultBody(p, V2, c, faultOf(c, V2.address)))).status).to.equal(200);
    const confirm = await faultBody(p, V2, c, own.message.fault);
    expect(confirm.digest).to.equal(own.digest);
    const r = await host.post("/claims", confirm);
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    await host.tick();
    const [slash] = await p.escrow.queryFilter(p.escrow.filters.ProviderSlashed());
    expect([slash?.args.jobId, slash?.args.finder], "the confirmed claim went on chain").to.deep.equal([
      c.jobId,
      V1.address,
    ]);
  });

  it("(c) entries for checkpoints not pending on chain (decided, lapsed, never reported, never existed) leave the pool, the state file and GET /claims", async function () {
    const p = await load();
    const c = await reported(p);
    const clock = manualClock();
    const host = await started(p, { clock, claimHoldMs: 120_000 });
    // The malicious owner's junk around one honest checkpoint: a spoofed refusal and a refusal on it, claims on
    // checkpoints that never existed (other hashes at the pending step, jobs that do not exist), a signature for a
    // step not reported, and a claim on a second checkpoint that lapses.
    const junk = [
      await faultBody(p, V1, c, faultOf(c, Wallet.createRandom().address)),
      await acceptBody(p, V1, c, false),
      await acceptBody(p, V1, { ...c, step: 20, hash: ckpt(c.jobId, 20) }),
    ];
    for (let i = 0; i < 20; i++) {
      const ghost = { ...c, hash: hexlify(randomBytes(32)) };
      junk.push(await faultBody(p, V1, ghost, faultOf(ghost, V1.address)));
    }
    for (let i = 0; i < 5; i++) {
      const noJob = { jobId: 1_000n + BigInt(i), epoch: 1n, step: 10, hash: ckpt(1_000n + BigInt(i), 10) };
      junk.push(await faultBody(p, V1, noJob, faultOf(noJob, V1.address))); // jobs that do not exist
    }
    const lapsing = await reported(p, await createJobAssigned(p));
    junk.push(await faultBody(p, V1, lapsing, faultOf(lapsing, V1.address)));
    for (const body of junk) {
      const r = await host.post(body.kind === "checkpoint" ? "/signatures" : "/claims", body);
      expect(r.status, JSON.stringify(r.body)).to.equal(200);
    }
    expect(host.collector.pool.size).to.equal(junk.length);
    expect(savedPending(host.stateFile)).to.have.length(junk.length);
    // The honest accept of the first checkpoint (past any hold); the second one's decision window closes undecided.
    for (const w of [V2, V3]) await host.post("/signatures", await acceptBody(p, w, c));
    clock.advance(120_000);
    await host.tick();
    expect(await accepted(p, c)).to.equal(true);
    await networkHelpers.time.increase(3_601);
    await host.tick();
    expect(
      [...host.collector.pool.values()].map((e) => e.digest),
      "pool",
    ).to.deep.equal([]);
    expect(savedPending(host.stateFile), "state file").to.deep.equal([]);
    expect(await host.claims(), "GET /claims").to.deep.equal([]);
    const dropped = (msg: string) => host.lines.filter((l) => l.msg === msg).length;
    expect(dropped("no longer pending on chain; dropped"), "decided: done for good").to.equal(2);
    expect(dropped("not pending now; dropped"), "never existed, not reported, lapsed").to.equal(20 + 1 + 1);
    expect(dropped("no such job; dropped"), "5 jobs that do not exist").to.equal(5);
    // Re-sent junk about a decided checkpoint is answered "done"; other junk is pooled again only until the next tick.
    expect((await host.post("/claims", junk[0])).body.state).to.equal("done");
    for (const body of junk.slice(2)) await host.post(body.kind === "checkpoint" ? "/signatures" : "/claims", body);
    expect(host.collector.pool.size).to.equal(junk.length - 2);
    await host.tick();
    expect(host.collector.pool.size).to.equal(0);
    expect(savedPending(host.stateFile)).to.deep.equal([]);
  });

  it("(d) an owner that is down costs the quorum wait only until it is silent (3 decided checkpoints, 60 s), and again the moment it posts", async function () {
    const p = await load();
    const jobId = await createJobAssigned(p);
    const clock = manualClock();
    const host = await started(p, { clock, quorumWaitMs: 15_000 });
    const waits: number[] = [];
    /** Reports the next checkpoint, the two live owners accept it; returns how long the accept waited (ms). */
    const nextCheckpoint = async () => {
      const { acceptedStep } = await p.escrow.jobOf(jobId);
      const c = await reported(p, jobId, Number(acceptedStep) + 10);
      for (const w of [V1, V2]) await host.post("/signatures", await acceptBody(p, w, c));
      await host.tick();
      let waited = 0;
      while ((await p.escrow.jobOf(jobId)).acceptedStep < BigInt(c.step)) {
        clock.advance(15_000 - 1);
        await host.tick();
        expect((await p.escrow.jobOf(jobId)).acceptedStep, "t − 1: still waiting").to.be.lessThan(BigInt(c.step));
        clock.advance(1);
        await host.tick();
        waited += 15_000;
      }
      waits.push(waited);
      return c;
    };
    for (let i = 0; i < 5; i++) await nextCheckpoint(); // V3 is down
    // 1–4 waited for V3; by the 5th, 4 checkpoints were decided and 60 s passed without a word from it.
    expect(waits).to.deep.equal([15_000, 15_000, 15_000, 15_000, 0]);
    expect(host.collector.silentOwners()).to.deep.equal(new Set([V3.address.toLowerCase()]));
    // V3 comes back: its first post (even about a checkpoint already decided) makes it an owner worth waiting for.
    const { acceptedStep, acceptedHash, epoch } = await p.escrow.jobOf(jobId);
    const last = { jobId, epoch, step: Number(acceptedStep), hash: acceptedHash };
    expect((await host.post("/signatures", await acceptBody(p, V3, last))).body.state).to.equal("done");
    expect(host.collector.silentOwners().size).to.equal(0);
    await nextCheckpoint();
    expect(waits.at(-1), "waited for V3 again").to.equal(15_000);
  });

  it("(e) a co-signature in a form the escrow refuses (v = 0/1 or EIP-155 style instead of 27/28) cannot make the honest accept revert", async function () {
    for (const shift of [-27, 8]) {
      // 27/28 → 0/1, or → 35/36 (EIP-155 style: odd reads as 27, even as 28)
      const p = await load();
      const c = await reported(p);
      const host = await started(p, {});
      // V1's address sorts between V2's and V3's, so its signature is packed with V2's: the first two by address.
      expect(BigInt(V2.address) < BigInt(V1.address) && BigInt(V1.address) < BigInt(V3.address)).to.equal(true);
      const honest = await acceptBody(p, V1, c);
      const v = parseInt(honest.signature.slice(-2), 16) + shift;
      const odd = { ...honest, signature: honest.signature.slice(0, -2) + v.toString(16).padStart(2, "0") };
      expect((await host.post("/signatures", odd)).status, "recovers to V1 all the same").to.equal(200);
      for (const w of [V2, V3]) await host.post("/signatures", await acceptBody(p, w, c));
      await host.tick();
      expect(await accepted(p, c), `v ${v}: accepted`).to.equal(true);
      expect(
        host.lines.filter((l) => l.level === "error"),
        "no failed send",
      ).to.deep.equal([]);
    }
  });
});

async function createJobAssigned(p: Protocol): Promise<bigint> {
  const jobId = await createJob(p);
  await p.escrow.connect(p.coordinator).assign(jobId, p.provider1.address);
  return jobId;
}
