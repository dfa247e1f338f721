/**
 * The `write-after-fence` fault: a fenced worker that keeps writing at its old epoch. Each write is really sent
 * (with a fixed gas limit, so no node-side estimate stops it first) and mined; the escrow must reject every one.
 * The reason is read with an eth_call first, and each rejection is logged. An accepted write would be a protocol
 * bug and is logged as an error.
 */
import { id as keccakId } from "ethers";
import { decodeCustomError, describeError } from "../sdk/errors.ts";
import { sleep } from "../sdk/retry.ts";
import type { ChainJob } from "./decide.ts";
import type { WorkContext } from "./work.ts";

const GAS_LIMIT = 300_000n;

export async function writeAfterFence(
  ctx: WorkContext, job: ChainJob, epoch: bigint, last: { step: number; hash: string } | undefined,
): Promise<void> {
  const { escrow } = ctx.chain.protocol;
  const step = last?.step ?? job.acceptedStep + 1;
  const hash = last?.hash ?? keccakId(`gpuchain/write-after-fence/${job.id}/${epoch}`);
  const log = ctx.logger.child({ job: job.id, epoch, fault: "write-after-fence" });
  log.warn("injected fault write-after-fence: writing at the old epoch anyway");
  const writes = {
    reportCheckpoint: {
      reason: () => escrow.reportCheckpoint.staticCall(job.id, epoch, step, hash),
      send: () => escrow.reportCheckpoint(job.id, epoch, step, hash, { gasLimit: GAS_LIMIT }),
    },
    heartbeat: {
      reason: () => escrow.heartbeat.staticCall(job.id, epoch),
      send: () => escrow.heartbeat(job.id, epoch, { gasLimit: GAS_LIMIT }),
    },
  };
  for (let attempt = 1; attempt <= ctx.config.writeAfterFenceAttempts && !ctx.deps.signal.aborted; attempt++) {
    for (const [what, w] of Object.entries(writes)) {
      const reason = await w.reason().then(
        () => "none (the chain would accept it)",
        (err) => decodeCustomError(err, ctx.chain.iface) ? describeError(err, ctx.chain.iface) : "unknown",
      );
      const r = await ctx.chain.write(`${what} after fence`, w.send);
      if (r.ok) log.error("write after fence ACCEPTED by the chain (fencing is broken)", { what, attempt, tx: r.hash });
      else log.warn("write after fence rejected by the chain", { what, attempt, step, reason, revert: r.description });
    }
    await sleep(ctx.config.pollMs, ctx.deps.signal);
  }
}
