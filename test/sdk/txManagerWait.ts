/**
 * A process waiting for its transaction stays alive until it is mined (sdk/node/txManager.ts `follow`), found by the
 * rehearsal (demo/rehearsal.ts): on a chain that mines on a timer, the provider agent sent its registration and exited
 * with code 0 before the next block, because the only thing left on its event loop was the follow loop's unref'd poll
 * timer. Real anvil mining a block every 2 s; the sender is a separate process (test/helpers/keySender.ts).
 */
import { expect } from "chai";
import { Wallet } from "ethers";
import { freePort, startAnvil, TEST_KEYS } from "../../demo/chain.ts";
import { ProcessGroup, runToEnd } from "../../demo/processes.ts";

describe("sdk/txManager: a process waiting for a receipt on a timed chain (anvil, 2-s blocks)", function () {
  this.timeout(60_000);
  const group = new ProcessGroup(() => {});
  let rpc: string;

  before(async function () {
    rpc = await startAnvil(group, await freePort(0), { blockTime: 2 }, "txwait-chain");
  });
  after(async () => group.stopAll(3_000));

  it("does not exit before its transaction is mined: it prints the receipt's status", async function () {
    const to = new Wallet(TEST_KEYS.keeper).address;
    const { code, output } = await runToEnd(["test/helpers/keySender.ts", rpc, TEST_KEYS.client, to, "1", "wait"]);
    expect(code, output).to.equal(0);
    expect(output.trim(), "the sender's one line").to.equal(JSON.stringify({ nonces: [0], mined: [1] }));
  });
});
