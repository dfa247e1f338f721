/** The shared runner's cron mode (sdk/run/runner.ts); the interval mode is in test/keepers/runner.ts. */
import { expect } from "chai";
import { createLogger } from "../../sdk/run/log.ts";
import { runLoop } from "../../sdk/run/runner.ts";

function capture() {
  const lines: Record<string, unknown>[] = [];
  return { lines, logger: createLogger({ component: "test", write: (l) => lines.push(JSON.parse(l)) }) };
}

describe("sdk: the runner on a cron schedule", function () {
  it("never overlaps ticks (a firing during one is skipped, and logged); stops with its code", async function () {
    const { logger, lines } = capture();
    let running = 0;
    let max = 0;
    let ticks = 0;
    const code = await runLoop({
      name: "t",
      cron: "* * * * * *",
      once: false,
      signal: new AbortController().signal,
      logger,
      tick: async () => {
        max = Math.max(max, ++running);
        ticks++;
        // Longer than one second: the next firing comes while this tick runs.
        await new Promise((r) => setTimeout(r, ticks === 1 ? 1_500 : 0));
        running--;
        if (ticks === 2) return { stop: true, exitCode: 4 };
      },
    });
    expect(code).to.equal(4);
    expect(ticks).to.equal(2);
    expect(max).to.equal(1);
    expect(lines.some((l) => String(l.msg).includes("skipped") || String(l.msg).includes("overlap"))).to.equal(true);
    expect(lines.at(-1)).to.include({ msg: "stopped", exitCode: 4 });
  });

  it("stops cleanly on its signal; --once runs exactly one tick without waiting for the schedule", async function () {
    const { logger } = capture();
    const controller = new AbortController();
    let ticks = 0;
    const tick = async () => void ticks++;
    const done = runLoop({ name: "t", cron: "* * * * * *", once: false, signal: controller.signal, logger, tick });
    await new Promise((r) => setTimeout(r, 1_200));
    controller.abort();
    expect(await done).to.equal(0);
    const seen = ticks;
    await new Promise((r) => setTimeout(r, 1_100));
    expect(ticks).to.equal(seen); // nothing ticks after the stop
    // --once on a yearly schedule: it ticks now (waiting for 1 January would time the test out).
    let once = 0;
    const one = { name: "t", cron: "0 0 1 1 *", once: true, signal: new AbortController().signal, logger };
    expect(await runLoop({ ...one, tick: async () => void once++ })).to.equal(0);
    expect(once).to.equal(1);
  });

  it("refuses an invalid cron expression", async function () {
    const { logger } = capture();
    const signal = new AbortController().signal;
    const run = runLoop({ name: "t", cron: "every tuesday", once: false, signal, logger, tick: async () => {} });
    await run.then(
      () => expect.fail("should throw"),
      (err) => expect(err).to.be.instanceOf(RangeError),
    );
  });
});
