// sdk/node/chainWake.ts on Hardhat's simulated chain: a sleep ends at the first log matching its filter, not at other
// logs, and a matching log mined while nobody slept ends the next sleep at once (decisions pushed).
import { expect } from "chai";
import type { Provider } from "ethers";
import { ChainWake, eventTopics } from "../../sdk/node/chainWake.ts";
import { localProtocol, type LocalProtocol } from "./helpers.ts";

describe("agent: ChainWake (decisions pushed, not polled)", function () {
  this.timeout(60_000);
  let p: LocalProtocol;
  let wake: ChainWake;
  let n = 0;
  const approve = async () =>
    (await p.escrow.connect(p.owner).setTemplateApproval(p.ethers.id(`wake-test-${n++}`), true)).wait();
  const elapsed = async (f: () => Promise<void>) => {
    const t0 = performance.now();
    await f();
    return performance.now() - t0;
  };

  before(async function () {
    p = await localProtocol();
    const filter = {
      address: p.deployment.escrow,
      topics: eventTopics(p.escrow.interface, ["TemplateApprovalSet"]),
    };
    wake = new ChainWake({ provider: p.ethers.provider as unknown as Provider, filter, pollMs: 20 });
  });

  it("sleeps its whole time when no log matches, also while other events are mined", async function () {
    expect(await elapsed(() => wake.sleep(300))).to.be.at.least(299);
    const other = setTimeout(() => void p.createJob(4, 4), 50); // JobCreated: not in the filter
    expect(await elapsed(() => wake.sleep(400))).to.be.at.least(399);
    clearTimeout(other);
    expect(wake.lastWakeAt).to.equal(0);
  });

  it("ends at the first matching log", async function () {
    const ms = await elapsed(async () => {
      setTimeout(() => void approve(), 50);
      await wake.sleep(20_000);
    });
    expect(ms).to.be.below(20_000);
    expect(wake.lastWakeAt).to.be.greaterThan(0);
  });

  it("a matching log mined while nobody slept ends the next sleep at once; then it sleeps again", async function () {
    await approve();
    expect(await elapsed(() => wake.sleep(20_000))).to.be.below(20_000);
    expect(await elapsed(() => wake.sleep(200))).to.be.at.least(199);
  });

  it("returns at once when its signal is aborted", async function () {
    const stop = new AbortController();
    setTimeout(() => stop.abort(), 50);
    expect(await elapsed(() => wake.sleep(20_000, stop.signal))).to.be.below(20_000);
  });
});
