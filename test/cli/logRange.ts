/**
 * sdk/node/logRange.ts against a real second node implementation (anvil): it does reject a log query that starts past
 * its head, and the cursor and reader never ask for one; spans are honoured; a timer-mined chain is followed.
 */
import { expect } from "chai";
import { JsonRpcProvider, Wallet } from "ethers";
import { freePort, startAnvil, TEST_KEYS } from "../../demo/chain.ts";
import { ProcessGroup } from "../../demo/processes.ts";
import { startFaultProxy } from "../../sdk/node/faultProxy.ts";
import { blockRanges, isRangeRefusal, LogCursor, readLogs } from "../../sdk/node/logRange.ts";
import { sleep } from "../../sdk/run/retry.ts";

/** Creation code of a contract whose every call emits one LOG0 (runtime 0x60006000a000: LOG0(0, 0); STOP). */
const EMITS_A_LOG = "0x6560006000a0006000526006601af3";

describe("sdk/logRange: reading logs from any standard node", function () {
  this.timeout(60_000);
  const group = new ProcessGroup(() => {});
  let provider: JsonRpcProvider;
  let timed: JsonRpcProvider;
  let automineUrl: string;

  before(async function () {
    automineUrl = await startAnvil(group, await freePort(0), {}, "automine");
    provider = new JsonRpcProvider(automineUrl, undefined, {
      staticNetwork: true,
      cacheTimeout: -1,
    });
    timed = new JsonRpcProvider(await startAnvil(group, await freePort(0), { blockTime: 1 }, "timer"), undefined, {
      staticNetwork: true,
      cacheTimeout: -1,
    });
  });

  after(async function () {
    provider.destroy();
    timed.destroy();
    await group.stopAll(3_000);
  });

  it("splits a range into spans, and an empty or inverted range into none", function () {
    expect(blockRanges(5, 4, 10)).to.deep.equal([]);
    expect(blockRanges(5, 5, 10)).to.deep.equal([{ fromBlock: 5, toBlock: 5 }]);
    expect(blockRanges(0, 24, 10)).to.deep.equal([
      { fromBlock: 0, toBlock: 9 },
      { fromBlock: 10, toBlock: 19 },
      { fromBlock: 20, toBlock: 24 },
    ]);
  });

  it("anvil really rejects head+1..head, and that refusal is recognised", async function () {
    const head = await provider.getBlockNumber();
    const err = await provider.getLogs({ fromBlock: head + 1, toBlock: head }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err, "anvil answered an inverted range").to.not.equal(undefined);
    expect(isRangeRefusal(err)).to.equal(true);
    expect(isRangeRefusal(new Error("connect ECONNREFUSED"))).to.equal(false);
  });

  it("a cursor at the head returns nothing (instead of failing), then the next block's logs", async function () {
    const signer = new Wallet(TEST_KEYS.client, provider);
    const cursor = new LogCursor(provider, { address: signer.address }, (await provider.getBlockNumber()) + 1);
    expect((await cursor.poll()).logs).to.deep.equal([]);
    expect((await cursor.poll()).logs).to.deep.equal([]);
    await (await signer.sendTransaction({ to: signer.address, value: 0n })).wait();
    const { head } = await cursor.poll();
    expect(cursor.position).to.equal(head + 1);
  });

  it("reads across many spans exactly once each", async function () {
    const head = await provider.getBlockNumber();
    const all = await provider.getLogs({ fromBlock: 0, toBlock: head });
    expect(await readLogs(provider, {}, 0, head, 1)).to.have.length(all.length);
  });

  it("a poll that fails part way keeps what it read: the next poll goes on from there, and returns each log once", async function () {
    const signer = new Wallet(TEST_KEYS.client, provider);
    const created = (await (await signer.sendTransaction({ data: EMITS_A_LOG })).wait())!;
    const emitter = created.contractAddress!;
    const blocks: number[] = [];
    for (let i = 0; i < 12; i++)
      blocks.push((await (await signer.sendTransaction({ to: emitter })).wait())!.blockNumber);
    // 12 blocks in spans of 2: six eth_getLogs; the fourth answered 503 once (what a rate-limited endpoint does)
    let getLogs = 0;
    const proxy = await startFaultProxy({
      target: automineUrl,
      script: ({ methods }) => (methods.includes("eth_getLogs") && ++getLogs === 4 ? "http5xx" : "pass"),
    });
    const through = new JsonRpcProvider(proxy.url, undefined, {
      staticNetwork: true,
      cacheTimeout: -1,
      batchMaxCount: 1,
    });
    try {
      const cursor = new LogCursor(through, { address: emitter }, created.blockNumber + 1, 0, 2);
      const failed = await cursor.poll().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(failed, "the 503 reached the caller").to.not.equal(undefined);
      expect(cursor.position, "the cursor did not move past what it could not read").to.equal(created.blockNumber + 1);
      const { logs, head } = await cursor.poll();
      expect(logs.map((l) => l.blockNumber)).to.deep.equal(blocks);
      expect(head).to.equal(blocks[11]);
      // 3 spans read, 1 refused, then the 3 spans left: 7 requests (from scratch again it would be 3 + 1 + 6 = 10)
      expect(getLogs).to.equal(7);
    } finally {
      through.destroy();
      await proxy.stop();
    }
  });

  it("follows a chain that mines on a timer", async function () {
    const cursor = new LogCursor(timed, {}, await timed.getBlockNumber());
    const heads = new Set<number>();
    for (let i = 0; i < 10; i++) {
      heads.add((await cursor.poll()).head);
      await sleep(300);
    }
    expect(heads.size, "the head moved on its own").to.be.greaterThan(1);
  });
});
