/**
 * The keepers' test helpers, on the one protocol fixture (test/helpers/fixture.ts: the Ignition deployment with a
 * real 2-of-3 Safe, named actors, job and signature helpers): keeper contexts with an injected clock, logger and
 * sender, failing senders, heartbeats and log filters.
 */
import type { HDNodeWallet, Signer } from "ethers";
import { signHeartbeat, type SignedHeartbeat } from "../../sdk/rules/heartbeat.ts";
import { machineId } from "../../sdk/run/machine.ts";
import { createLogger, type Logger } from "../../sdk/run/log.ts";
import { escrowDomain, verdictDigest } from "../../sdk/rules/verifierSignatures.ts";
import type { KeeperContext, Sender, TxHandle } from "../../keepers/chain.ts";
import { keeperContext } from "../../keepers/context.ts";
import {
  DEFAULT_REQUEST,
  deployProtocol,
  ethers,
  networkHelpers,
  signDigest,
  type Protocol,
} from "../helpers/fixture.ts";

export {
  ARBITER_TIMEOUT,
  ckpt,
  connection,
  createJob,
  deployProtocol,
  ethers,
  LEASE,
  MNEMONIC,
  networkHelpers,
  reportAndAccept,
  signDigest,
  TEMPLATE,
  trainToEnd,
  wallet,
  type Protocol,
} from "../helpers/fixture.ts";

export const REQUEST = DEFAULT_REQUEST;

export const load = () => networkHelpers.loadFixture(deployProtocol);

export const domainOf = (p: Protocol) => escrowDomain(p.chainId, p.deployment.escrow);

/** A passing (or failing) verdict with metric 9700, signed by verifiers 1 and 2 and relayed by the stranger. */
export async function submitVerdict(p: Protocol, jobId: bigint, modelHash: string, passed = true): Promise<void> {
  const digest = verdictDigest(domainOf(p), { jobId, modelHash, metric: 9_700n, passed });
  await p.escrow.connect(p.stranger).submitVerdict(jobId, modelHash, 9_700n, passed, await signDigest(p, digest));
}

/** A logger that keeps its records for assertions (and prints nothing). */
export function captureLogger(component = "test"): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({
    component,
    write: (line) => {
      lines.push(JSON.parse(line));
      if (process.env.KEEPER_TEST_LOGS) console.log(line);
    },
  });
  return { logger, lines };
}

/** A clock the test moves by hand. */
export function manualClock(start = 1_700_000_000_000) {
  let now = start;
  return { now: () => now, set: (t: number) => void (now = t), advance: (ms: number) => void (now += ms) };
}

export interface TestContextOptions {
  signer?: Signer;
  dryRun?: boolean;
  nowMs?: () => number;
  sender?: (base: Sender) => Sender;
  txTimeoutMs?: number;
  rpcTimeoutMs?: number;
  component?: string;
}

export async function testContext(p: Protocol, o: TestContextOptions = {}) {
  const { logger, lines } = captureLogger(o.component);
  const ctx: KeeperContext = await keeperContext({
    deployment: p.deployment,
    provider: ethers.provider,
    chainId: p.chainId,
    logger,
    signer: o.signer,
    dryRun: o.dryRun,
    nowMs: o.nowMs,
    sender: o.sender,
    txTimeoutMs: o.txTimeoutMs ?? 10_000,
    rpcTimeoutMs: o.rpcTimeoutMs ?? 5_000,
    retry: { retries: 3, baseMs: 10, maxMs: 50 },
  });
  return { ctx, lines };
}

/** Where an injected sender fails, as if the keeper process died there. */
export type CrashPoint = "before send" | "after send, before receipt" | "after receipt";
export const CRASH_POINTS: CrashPoint[] = ["before send", "after send, before receipt", "after receipt"];

export class Crash extends Error {}

/** A sender that "dies" at `point` on its first send (the tx is broadcast for the later points). */
export function crashingSender(point: CrashPoint) {
  return (base: Sender): Sender => ({
    simulate: (m, a) => base.simulate(m, a),
    async send(m, a): Promise<TxHandle> {
      if (point === "before send") throw new Crash(`killed ${point}`);
      const handle = await base.send(m, a);
      if (point === "after send, before receipt") throw new Crash(`killed ${point}`);
      await handle.wait();
      throw new Crash(`killed ${point}`);
    },
  });
}

/** A sender that resolves without broadcasting and never gets a receipt (a dropped transaction). */
export function droppingSender(base: Sender): Sender {
  return {
    simulate: (m, a) => base.simulate(m, a),
    send: async () => ({ hash: "0x" + "de".repeat(32), wait: () => new Promise(() => {}) }),
  };
}

/** A sender whose first `failures` sends fail like a flaky RPC (retryable). */
export function flakySender(failures: number) {
  let left = failures;
  return (base: Sender): Sender => ({
    simulate: (m, a) => base.simulate(m, a),
    async send(m, a) {
      if (left-- > 0) throw Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:8545"), { code: "ECONNREFUSED" });
      return base.send(m, a);
    },
  });
}

/** Holds every sender at the send until `n` of them got there (both keepers decided and simulated). */
export function barrier(n: number) {
  let arrived = 0;
  let release!: () => void;
  const all = new Promise<void>((r) => (release = r));
  return (base: Sender): Sender => ({
    simulate: (m, a) => base.simulate(m, a),
    async send(m, a) {
      if (++arrived >= n) release();
      await all;
      return base.send(m, a);
    },
  });
}

/**
 * A signed beat for the deployment `p` (its chain id and escrow: see sdk/rules/heartbeat.ts), at step 0 and with no
 * device profile unless `o` says otherwise.
 */
export async function beat(
  w: HDNodeWallet,
  p: { chainId: bigint; deployment: { escrow: string } },
  sentAt: number,
  jobId = 0n,
  epoch = 0n,
  o: { step?: number; profile?: string } = {},
): Promise<SignedHeartbeat> {
  return signHeartbeat(w as never, {
    chainId: p.chainId.toString(),
    escrow: p.deployment.escrow,
    machine: machineId(),
    provider: w.address,
    jobId: jobId.toString(),
    epoch: epoch.toString(),
    step: o.step ?? 0,
    sentAt,
    ...(o.profile === undefined ? {} : { profile: o.profile }),
  });
}

export async function eventCount(p: Protocol, name: string, ...args: unknown[]): Promise<number> {
  const filter = (p.escrow.filters as unknown as Record<string, (...a: unknown[]) => never>)[name](...args);
  return (await p.escrow.queryFilter(filter)).length;
}

export const warnings = (lines: Record<string, unknown>[]) => lines.filter((l) => l.level === "warn");
export const errors = (lines: Record<string, unknown>[]) => lines.filter((l) => l.level === "error");
