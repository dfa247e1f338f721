/**
 * A provider's own last problem (before, the dashboard's follow stepper guessed, and said "it stopped heartbeating"
 * of a provider whose uploads failed while it beat every second). The real agent on the local chain with a real
 * file store that cannot be written (its folder's parent is a file: every put fails ENOTDIR), then repaired: the
 * signed heartbeats carry "checkpoint store unreachable: …" while it lasts and nothing once a report lands; the
 * coordinator's heartbeat book accepts such a beat and its GET /heartbeats view lists the problem; a problem that
 * was altered after signing, or is not printable text of at most 200 characters, is refused.
 */
import { expect } from "chai";
import { mkdtemp, rm, writeFile, mkdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Wallet } from "ethers";
import { checkHeartbeat, signHeartbeat, type Heartbeat } from "../../sdk/rules/heartbeat.ts";
import { parseHeartbeat } from "../../keepers/coordinator/heartbeats.ts";
import { HeartbeatView } from "../../keepers/coordinator/heartbeatView.ts";
import { FsCheckpointStore } from "../../workloads/index.ts";
import { isOutOfGasMoney, MAX_PROBLEM_CHARS, Problems } from "../../agent/problems.ts";
import { localProtocol, staked, startAgent, until } from "./helpers.ts";

describe("agent: its own last problem rides in its signed heartbeat", function () {
  this.timeout(120_000);

  it("an unwritable store: 'checkpoint store unreachable' in every beat while it lasts, gone once a report lands", async function () {
    const p = await localProtocol();
    const root = await mkdtemp(join(tmpdir(), "gpuchain-problem-"));
    const blocker = join(root, "store");
    await writeFile(blocker, "not a folder"); // the store's folder is a file: every put fails (ENOTDIR/EEXIST)
    const store = new FsCheckpointStore(join(blocker, "blobs"), { retry: { attempts: 1, baseDelayMs: 1 } });
    const jobId = await p.createJob(8, 4);
    const wallet = await p.fundedWallet();
    const agent = await startAgent(wallet, p.deployment, { store });
    try {
      await until("registration and stake", () => staked(p.registry, wallet.address));
      await (await p.escrow.connect(p.coordinator).assign(jobId, wallet.address)).wait();
      const troubled = await until("a beat with the store problem", () =>
        agent.beats.find((b) => b.problem?.startsWith("checkpoint store unreachable")),
      );
      const { chainId } = await p.ethers.provider.getNetwork();
      const scope = { chainId: chainId.toString(), escrow: String(p.escrow.target) };
      expect(checkHeartbeat(troubled, scope, Date.now(), undefined)).to.deep.equal({ ok: true });
      // The problem is signed: changed after signing, the beat no longer checks.
      const forged = { ...troubled, problem: "all fine" };
      expect(checkHeartbeat(forged, scope, Date.now(), undefined)).to.deep.include({ ok: false });
      expect((await p.escrow.jobOf(jobId)).pendingStep).to.equal(0n);

      // Repaired: the folder can be created now; the next report lands and the beats carry no problem.
      await rm(blocker);
      await mkdir(blocker);
      await until("a report", async () => (await p.escrow.jobOf(jobId)).pendingStep === 4n);
      const n = agent.beats.length;
      await until("a later beat", () => agent.beats.length > n);
      expect(agent.beats.at(-1)!.problem).to.equal(undefined);
    } finally {
      await agent.stop();
      await rm(root, { recursive: true, force: true });
    }
  });

  it("the coordinator lists a beat's problem and machine (GET /heartbeats) and refuses one that is not short printable text", async function () {
    const wallet = new Wallet(Wallet.createRandom().privateKey);
    const base: Heartbeat = {
      chainId: "31337",
      escrow: wallet.address,
      provider: wallet.address,
      jobId: "0",
      epoch: "0",
      step: 0,
      sentAt: Date.now(),
      machine: "0xabc",
      profile: "ort-1.30.0/cpu/x86-avx2",
      problem: "waiting for gas: reportCheckpoint failed, the key cannot pay for it",
    };
    const signed = await signHeartbeat(wallet, base);
    expect(parseHeartbeat(JSON.parse(JSON.stringify(signed)))).to.be.an("object");
    const view = new HeartbeatView();
    view.record(signed as unknown as Record<string, unknown>, 1_000);
    const listed = view.route(() => 1_500)(undefined) as {
      body: { beats: { problem: string | null; machine: string | null }[] };
    };
    expect(listed.body.beats.map((b) => b.problem)).to.deep.equal([base.problem]);
    // and its signed machine identity: the dashboard's "Real, separate machine" compares it with its own
    expect(listed.body.beats.map((b) => b.machine)).to.deep.equal([base.machine]);
    for (const problem of ["x".repeat(201), "line\nbreak", ""]) {
      expect(parseHeartbeat({ ...signed, problem }), JSON.stringify(problem)).to.equal(
        "problem must be printable text of at most 200 characters",
      );
    }
    // A problem is signed as "problem: TEXT" and a profile has no space: a beat's problem cannot be replayed as
    // its profile (the signature would check, the shape does not).
    const noProfile = await signHeartbeat(wallet, { ...base, profile: undefined, problem: "x" });
    const swapped = { ...noProfile, profile: "problem: x", problem: undefined };
    expect(checkHeartbeat(swapped, base, base.sentAt, undefined)).to.deep.equal({ ok: true });
    expect(parseHeartbeat(JSON.parse(JSON.stringify(swapped)))).to.equal("profile must be a short printable string");
  });

  it("Problems: the newest open one, since when it started; cut to 200 printable characters; cleared by kind", function () {
    let t = 0;
    const problems = new Problems(() => t);
    expect(problems.current()).to.equal(undefined);
    problems.set("store", "checkpoint store unreachable: ECONNREFUSED");
    t = 5;
    problems.set("gas", "waiting for gas: heartbeat failed");
    expect(problems.current()).to.equal("waiting for gas: heartbeat failed");
    t = 9;
    problems.set("store", "checkpoint store unreachable: again"); // keeps its start (0): gas is still the newest
    expect(problems.current()).to.equal("waiting for gas: heartbeat failed");
    problems.clear("gas");
    expect(problems.current()).to.equal("checkpoint store unreachable: again");
    problems.set("store", "é\n" + "y".repeat(300));
    expect(problems.current()).to.have.length(MAX_PROBLEM_CHARS);
    expect(problems.current()).to.match(/^[\x20-\x7e]+$/);
    problems.clear("store");
    expect(problems.current()).to.equal(undefined);
    expect(isOutOfGasMoney("insufficient funds for intrinsic transaction cost")).to.equal(true);
    expect(isOutOfGasMoney("JobEscrowStaleEpoch(1, 2)")).to.equal(false);
  });
});
