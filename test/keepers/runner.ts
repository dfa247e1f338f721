/**
 * The shared keeper machinery: the runner (loop or once, no overlap, clean stop, errors do not kill it) and the
 * send queue that gives keepers sharing one key distinct nonces.
 */
import { expect } from "chai";
import { execute, SendQueue } from "../../keepers/chain.ts";
import { nonOverlapping, runLoop } from "../../sdk/run/runner.ts";
import { captureLogger, createJob, ethers, load, testContext, wallet } from "./fixture.ts";

describe("keepers: runner and send queue", function () {
  it("loops until aborted, never runs two ticks at once, and survives a failing tick", async function () {
    const { logger, lines } = captureLogger();
    const controller = new AbortController();
    let running = 0;
    let max = 0;
    let ticks = 0;
    const code = await runLoop({
      name: "t",
      intervalMs: 1,
      once: false,
      signal: controller.signal,
      logger,
      tick: async () => {
        max = Math.max(max, ++running);
        ticks++;
        await new Promise((r) => setTimeout(r, 5));
        running--;
        if (ticks === 2) throw new Error("rpc down");
        if (ticks === 4) controller.abort();
      },
    });
    expect([code, ticks, max]).to.deep.equal([0, 4, 1]);
    expect(lines.filter((l) => l.level === "error").map((l) => l.error)).to.deep.equal(["rpc down"]);
    expect(lines.at(-1)).to.include({ msg: "stopped", exitCode: 0 });
  });

  it("--once runs one tick; its failure is exit code 1; a tick may stop the loop with its own code", async function () {
    const { logger } = captureLogger();
    const signal = new AbortController().signal;
    let n = 0;
    expect(
      await runLoop({ name: "t", intervalMs: 1, once: true, signal, logger, tick: async () => void n++ }),
    ).to.equal(0);
    expect(n).to.equal(1);
    expect(
      await runLoop({
        name: "t",
        intervalMs: 1,
        once: true,
        signal,
        logger,
        tick: async () => {
          throw new Error("x");
        },
      }),
    ).to.equal(1);
    expect(
      await runLoop({
        name: "t",
        intervalMs: 1,
        once: false,
        signal,
        logger,
        tick: async () => ({ stop: true, exitCode: 3 }),
      }),
    ).to.equal(3);
  });

  it("nonOverlapping skips a call made while the previous one runs", async function () {
    let calls = 0;
    const g = nonOverlapping(async () => {
      calls++;
      await new Promise((r) => setTimeout(r, 20));
      return calls;
    });
    const [a, b] = await Promise.all([g.run(), g.run()]);
    expect([a, b, calls]).to.deep.equal([1, undefined, 1]);
    expect(await g.run()).to.equal(2);
  });

  it("two keepers sharing one key and one send queue get distinct nonces when sending at once", async function () {
    const p = await load();
    const jobA = await createJob(p);
    const jobB = await createJob(p);
    await p.escrow.connect(p.coordinator).assign(jobA, p.provider1.address);
    await p.escrow.connect(p.coordinator).assign(jobB, p.provider2.address);
    // A plain ethers Wallet (local signing, nonce from the node), as the CLI uses.
    const key = wallet(1).connect(ethers.provider);
    const queue = new SendQueue();
    const a = await testContext(p, { signer: key });
    const b = await testContext(p, { signer: key });
    const { keeperContext } = await import("../../keepers/context.ts");
    const ctxs = await Promise.all(
      [a, b].map((x) =>
        keeperContext({
          deployment: p.deployment,
          provider: ethers.provider,
          chainId: p.chainId,
          logger: x.ctx.logger,
          signer: key,
          sendQueue: queue,
        }),
      ),
    );
    const outcomes = await Promise.all([
      execute(ctxs[0], { method: "unassign", args: [jobA] }, ctxs[0].logger),
      execute(ctxs[1], { method: "unassign", args: [jobB] }, ctxs[1].logger),
    ]);
    expect(outcomes.map((o) => o.kind)).to.deep.equal(["confirmed", "confirmed"]);
    expect([Number(await p.escrow.statusOf(jobA)), Number(await p.escrow.statusOf(jobB))]).to.deep.equal([1, 1]);
  });
});
