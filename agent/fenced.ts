/**
 * The `write-after-fence` fault: a fenced worker that keeps writing at its old epoch. Each write is really sent
 * (with a fixed gas limit, so no node-side estimate stops it first) and mined; the escrow must reject every one.
 * The reason is read with an eth_call first, and each rejection is logged. An accepted write would be a protocol
 * bug and is logged as an error.
 */
import { id as keccakId } from "ethers";
import { decodeCustomError, describeError } from "../sdk/node/errors.ts";
import type { JobView } from "../sdk/rules/job.ts";
import type { Logger } from "../sdk/run/log.ts";
import { sleep } from "../sdk/run/retry.ts";
import type { Chain } from "./chain.ts";

/** What writing after the fence needs from the agent (a narrow slice of its work context). */
export interface FencedWriter {
  chain: Chain;
  logger: Logger;
  signal: AbortSignal;
  /** How many rejected writes of each kind to attempt, and the pause between rounds. */
  attempts: number;
  pollMs: number;
}

const GAS_LIMIT = 300_000n;

export async function writeAfterFence(
  ctx: FencedWriter,
  job: JobView,
  epoch: bigint,
  last: { step: number; hash: string } | undefined,
): Promise<void> {
  const { escrow } = ctx.chain.protocol;
  const step = last?.step ?? job.acceptedStep + 1;
  const hash = last?.hash ?? keccakId(`gpuchain/write-after-fence/${job.jobId}/${epoch}`);
  const log = ctx.logger.child({ job: job.jobId, epoch, fault: "write-after-fence" });
  log.warn("injected fault write-after-fence: writing at the old epoch anyway");
  const writes = {
    reportCheckpoint: {
      reason: () => escrow.reportCheckpoint.staticCall(job.jobId, epoch, step, hash),
      send: () => escrow.reportCheckpoint(job.jobId, epoch, step, hash, { gasLimit: GAS_LIMIT }),
    },
    heartbeat: {
      reason: () => escrow.heartbeat.staticCall(job.jobId, epoch),
      send: () => escrow.heartbeat(job.jobId, epoch, { gasLimit: GAS_LIMIT }),
    },
  };
  for (let attempt = 1; attempt <= ctx.attempts && !ctx.signal.aborted; attempt++) {
    for (const [what, w] of Object.entries(writes)) {
      const reason = await w.reason().then(
        () => "none (the chain would accept it)",
        (err) => (decodeCustomError(err, ctx.chain.iface) ? describeError(err, ctx.chain.iface) : "unknown"),
      );
      const r = await ctx.chain.write(`${what} after fence`, w.send);
      if (r.ok) log.error("write after fence ACCEPTED by the chain (fencing is broken)", { what, attempt, tx: r.hash });
      else log.warn("write after fence rejected by the chain", { what, attempt, step, reason, revert: r.description });
    }
    await sleep(ctx.pollMs, ctx.signal);
  }
}
