/**
 * The real verdict collector behind its real HTTP routes (keepers/collector/tick.ts), on a chosen clock, and what
 * the verifier Safe's owners post to it (bodies as verifier/work.ts builds them): shared by the malicious-verifier
 * tests (collectorHold.ts) and the bench that measures the worst delay one owner can cause (bench/verifierDelay.ts).
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { hexlify, randomBytes, type HDNodeWallet } from "ethers";
import { createCollector, serveCollector, type Collector } from "../../keepers/collector/tick.ts";
import type { JsonServer } from "../../keepers/http.ts";
import {
  checkpointDecisionDigest,
  claimCheckDigest,
  faultRefusalDigest,
  signAsSafeOwner,
  type Fault,
} from "../../sdk/rules/verifierSignatures.ts";
import { ckpt, createJob, domainOf, eventCount, testContext, wallet, type Protocol } from "../keepers/fixture.ts";

export const [V1, V2, V3] = [wallet(3), wallet(4), wallet(5)]; // the verifier Safe's owners; V1 is the malicious one

export type Checkpoint = { jobId: bigint; epoch: bigint; step: number; hash: string };
export type Answer = { status: number; body: Record<string, unknown> };
export type Clock = { now: () => number };

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const tmpState = () => path.join(mkdtempSync(path.join(tmpdir(), "gpuchain-collector-hold-")), "state.json");

/** The real collector behind its real HTTP routes, on `clock`. */
export class Host {
  collector!: Collector;
  server!: JsonServer;
  lines: Record<string, unknown>[] = [];
  readonly stateFile = tmpState();
  private ticking = false;
  private loop?: Promise<void>;

  static async start(p: Protocol, o: { clock?: Clock; claimHoldMs?: number; quorumWaitMs?: number }): Promise<Host> {
    const h = new Host();
    const { ctx, lines } = await testContext(p, { signer: p.stranger, component: "collector", nowMs: o.clock?.now });
    h.lines = lines;
    h.collector = createCollector(
      ctx,
      { stateFile: h.stateFile, dryRun: false, claimHoldMs: o.claimHoldMs, quorumWaitMs: o.quorumWaitMs },
      { safeAddress: p.deployment.verifierSafe, escrowAddress: p.deployment.escrow },
    );
    await h.collector.restore();
    h.server = await serveCollector(h.collector, "127.0.0.1", 0, ctx.logger);
    return h;
  }

  async post(route: "/signatures" | "/claims", body: unknown): Promise<Answer> {
    const r = await fetch(`${this.server.url}${route}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return { status: r.status, body: (await r.json()) as Record<string, unknown> };
  }

  async claims(): Promise<{ digest: string; signer: string }[]> {
    const r = await fetch(`${this.server.url}/claims`);
    return ((await r.json()) as { claims: { digest: string; signer: string }[] }).claims;
  }

  async tick(): Promise<void> {
    await this.collector.tick();
    await this.collector.idle();
  }

  /** Ticks every `ms` (real time) until `stop`, like the keeper's runner. */
  tickEvery(ms: number): void {
    this.ticking = true;
    this.loop = (async () => {
      while (this.ticking) {
        await this.tick();
        await sleep(ms);
      }
    })();
  }

  async stop(): Promise<void> {
    this.ticking = false;
    await this.loop;
    await this.server.close();
    await this.collector.idle();
  }
}

/** A job assigned to provider1 with checkpoint `step` reported (pending). */
export async function reported(p: Protocol, jobId?: bigint, step = 10): Promise<Checkpoint> {
  if (jobId === undefined) {
    jobId = await createJob(p);
    await p.escrow.connect(p.coordinator).assign(jobId, p.provider1.address);
  }
  const { epoch } = await p.escrow.jobOf(jobId);
  const hash = ckpt(jobId, step);
  await p.escrow.connect(p.provider1).reportCheckpoint(jobId, epoch, step, hash);
  return { jobId, epoch, step, hash };
}

export const json = (c: Checkpoint) => ({
  jobId: c.jobId.toString(),
  epoch: c.epoch.toString(),
  step: c.step,
  checkpointHash: c.hash,
});

export async function acceptBody(p: Protocol, w: HDNodeWallet, c: Checkpoint, accept = true) {
  const digest = checkpointDecisionDigest(domainOf(p), { ...c, checkpointHash: c.hash, accept });
  const signature = await signAsSafeOwner(w, p.chainId, p.deployment.verifierSafe, digest);
  return { kind: "checkpoint", message: { ...json(c), accept }, digest, signer: w.address, signature };
}

/** A fault at the checkpoint's last step naming `finder` (random replayed hash: a fresh digest every time). */
export function faultOf(c: Checkpoint, finder: string, step = c.step): Fault {
  return {
    step,
    inputHash: ckpt(c.jobId, step - 1),
    committedHash: c.hash,
    replayedHash: hexlify(randomBytes(32)),
    finder,
  };
}

/** `w`'s signature over the escrow's FaultRefusal digest of `fault` on `c` (a claim when w is the finder). */
export async function faultBody(p: Protocol, w: HDNodeWallet, c: Checkpoint, fault: Fault) {
  const digest = faultRefusalDigest(domainOf(p), { ...c, checkpointHash: c.hash, fault });
  const signature = await signAsSafeOwner(w, p.chainId, p.deployment.verifierSafe, digest);
  return { kind: "fault", message: { ...json(c), fault }, digest, signer: w.address, signature };
}

export async function checkBody(p: Protocol, w: HDNodeWallet, c: Checkpoint, claimDigest: string) {
  const typed = { ...c, checkpointHash: c.hash, claimDigest, reproduced: false };
  const digest = claimCheckDigest(domainOf(p), typed);
  const signature = await signAsSafeOwner(w, p.chainId, p.deployment.verifierSafe, digest);
  return {
    kind: "check",
    message: { ...json(c), claimDigest, reproduced: false },
    digest,
    signer: w.address,
    signature,
  };
}

export const accepted = async (p: Protocol, c: Checkpoint) => (await eventCount(p, "CheckpointAccepted", c.jobId)) > 0;
