/**
 * sdk/node/logRange.ts `LogCursor` across reorganisations on a real node (anvil's `anvil_reorg` / `anvil_rollback`):
 * reorgs of depth 1, 2 and 3 that remove a log the consumer already read or replace it with another are reported
 * from the common ancestor on, and the logs held after rolling back (`afterPoll`) equal a fresh read of the new
 * chain. An emitter contract logs its calldata, so a replacement log is distinguishable from the one it replaces.
 * And sdk/node/chainWake.ts, which follows blocks with the cursor to wake sleepers, wakes on a replaced block.
 */
import { expect } from "chai";
import { JsonRpcProvider, Wallet, hexlify, toUtf8Bytes, type Provider } from "ethers";
import { freePort, startAnvil, TEST_KEYS } from "../../demo/chain.ts";
import { ProcessGroup } from "../../demo/processes.ts";
import { ChainWake } from "../../sdk/node/chainWake.ts";
import { afterPoll, LogCursor, readLogs, type PollResult, type RawLog } from "../../sdk/node/logRange.ts";

/** Runtime: LOG1(topic 1) of its calldata. Init code: returns that runtime. */
const RUNTIME = "366000600037600136600" + "0a100";
const INIT = "0x6c" + RUNTIME + "600052600d6013f3";

const key = (l: RawLog) => `${l.blockNumber}:${l.index}:${l.data}:${l.blockHash}`;

describe("sdk/logRange: the cursor across reorganisations (anvil)", function () {
  this.timeout(60_000);
  const group = new ProcessGroup(() => {});
  let provider: JsonRpcProvider;
  let signer: Wallet;
  let emitter: string;

  before(async function () {
    provider = new JsonRpcProvider(await startAnvil(group, await freePort(0), {}, "reorg-chain"), undefined, {
      staticNetwork: true,
      cacheTimeout: -1,
    });
    signer = new Wallet(TEST_KEYS.client, provider);
    const receipt = await (await signer.sendTransaction({ data: INIT })).wait();
    emitter = receipt!.contractAddress!;
    expect(await provider.getCode(emitter)).to.equal("0x" + RUNTIME);
  });

  after(async function () {
    provider.destroy();
    await group.stopAll(3_000);
  });

  const tag = (s: string) => hexlify(toUtf8Bytes(s));
  async function emit(s: string) {
    await (await signer.sendTransaction({ to: emitter, data: tag(s) })).wait();
  }
  const fresh = async (p: Provider) => (await readLogs(p, { address: emitter }, 0, await p.getBlockNumber())).map(key);

  /** Polls until the cursor reaches the head; the logs it holds after every poll, rolled back on each reorg. */
  async function follow(cursor: LogCursor, held: RawLog[]): Promise<{ held: RawLog[]; polls: PollResult[] }> {
    const polls: PollResult[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await cursor.poll();
      polls.push(r);
      held = afterPoll(held, r);
      if (cursor.position > (await provider.getBlockNumber())) break;
    }
    return { held, polls };
  }

  for (const depth of [1, 2, 3]) {
    it(`a reorg of depth ${depth} that replaces the log the consumer read: reported, rolled back, = a fresh read`, async function () {
      const cursor = new LogCursor(provider, { address: emitter }, 0);
      for (let i = 0; i < 3; i++) await emit(`before-${depth}-${i}`);
      let { held, polls } = await follow(cursor, []);
      expect(polls.some((p) => p.reorged)).to.equal(false);
      const head = await provider.getBlockNumber();
      const seen = held.find((l) => l.blockNumber === head - depth + 1);
      expect(seen, "the consumer read a log in the block the reorg replaces").to.not.equal(undefined);

      const tx = { from: signer.address, to: emitter, data: tag(`replaced-${depth}`), gas: "0x30000" };
      await provider.send("anvil_reorg", [depth, [[tx, 0]]]);
      ({ held, polls } = await follow(cursor, held));
      const reorged = polls.find((p) => p.reorged)?.reorged;
      expect(reorged).to.deep.equal({ from: head - depth + 1, removed: depth });
      expect(held.map(key)).to.deep.equal(await fresh(provider));
      expect(held.map((l) => l.data)).to.not.include(seen!.data);
      expect(held.map((l) => l.data)).to.include(tag(`replaced-${depth}`));
    });
  }

  it("a reorg that only removes logs (no replacement), then a rollback to a shorter chain", async function () {
    const cursor = new LogCursor(provider, { address: emitter }, 0);
    for (let i = 0; i < 3; i++) await emit(`gone-${i}`);
    let { held } = await follow(cursor, []);
    const head = await provider.getBlockNumber();
    await provider.send("anvil_reorg", [2, []]);
    let polls: PollResult[];
    ({ held, polls } = await follow(cursor, held));
    expect(polls.find((p) => p.reorged)?.reorged).to.deep.equal({ from: head - 1, removed: 2 });
    expect(held.map((l) => l.data)).to.not.include(tag("gone-2"));
    expect(held.map(key)).to.deep.equal(await fresh(provider));

    await provider.send("anvil_rollback", [1]);
    ({ held, polls } = await follow(cursor, held));
    expect(polls.find((p) => p.reorged)?.reorged).to.deep.equal({ from: head, removed: 1 });
    expect(held.map(key)).to.deep.equal(await fresh(provider));
    await emit("after-rollback");
    ({ held, polls } = await follow(cursor, held));
    expect(polls.some((p) => p.reorged)).to.equal(false);
    expect(held.map(key)).to.deep.equal(await fresh(provider));
  });

  it("a reorg deeper than the blocks it remembers is reported from the cursor's first block", async function () {
    const start = (await provider.getBlockNumber()) + 1;
    const cursor = new LogCursor(provider, { address: emitter }, start, 2);
    for (let i = 0; i < 4; i++) await emit(`deep-${i}`);
    const before = await follow(cursor, []);
    await provider.send("anvil_reorg", [3, []]);
    const { held, polls } = await follow(cursor, before.held);
    expect(polls.find((p) => p.reorged)?.reorged?.from).to.equal(start);
    const now = await readLogs(provider, { address: emitter }, start, await provider.getBlockNumber());
    expect(held.map(key)).to.deep.equal(now.map(key));
  });

  it("remembering 0 blocks asks for no block (a reader that only wakes), and sees no reorg", async function () {
    let blocks = 0;
    const counting = new Proxy(provider, {
      get(target, prop, receiver) {
        if (prop === "getBlock") return (...a: [number]) => (blocks++, target.getBlock(...a));
        const v = Reflect.get(target, prop, receiver) as unknown;
        return typeof v === "function" ? (v as (...x: unknown[]) => unknown).bind(target) : v;
      },
    });
    const cursor = new LogCursor(counting, { address: emitter }, await provider.getBlockNumber(), 0);
    await emit("wake-0");
    expect((await cursor.poll()).logs).to.have.length(1);
    await provider.send("anvil_reorg", [1, []]);
    const r = await cursor.poll();
    expect(r.reorged).to.equal(undefined);
    expect(blocks).to.equal(0);
    const remembering = new LogCursor(counting, { address: emitter }, await provider.getBlockNumber());
    await remembering.poll();
    expect(blocks, "the default cursor does ask for blocks").to.be.greaterThan(0);
  });

  it("a ChainWake wakes on a reorganisation whose replacement block holds the event at a height it already read", async function () {
    const wake = new ChainWake({ provider, filter: { address: emitter }, pollMs: 20 });
    await wake.sleep(0); // follows blocks from here on
    await emit("wake-before");
    const elapsed = async (ms: number) => {
      const t0 = performance.now();
      await wake.sleep(ms);
      return performance.now() - t0;
    };
    expect(await elapsed(5_000), "an event wakes it").to.be.below(5_000);
    const tx = { from: signer.address, to: emitter, data: tag("wake-replaced"), gas: "0x30000" };
    await provider.send("anvil_reorg", [1, [[tx, 0]]]);
    expect(await elapsed(5_000), "the replaced block wakes it").to.be.below(5_000);
    expect(wake.reorgs).to.equal(1);
    expect(await elapsed(300), "then it sleeps again").to.be.at.least(299);
  });

  it("a log the node marks removed is never returned", async function () {
    const log = {
      address: emitter,
      topics: [],
      data: "0x",
      blockNumber: "0x1",
      logIndex: "0x0",
      transactionHash: "0x",
    };
    const fake = {
      send: async () => [
        { ...log, removed: true },
        { ...log, logIndex: "0x1", removed: false },
      ],
    } as unknown as Provider;
    expect((await readLogs(fake, {}, 1, 1)).map((l) => l.index)).to.deep.equal([1]);
  });
});
