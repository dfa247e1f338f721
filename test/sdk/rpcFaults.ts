/**
 * sdk/node/jsonRpc.ts + sdk/node/rpc.ts against a real node (anvil) behind the real fault proxy (sdk/node/faultProxy.ts): reads
 * come through 429s, 5xx, dropped answers, truncated bodies and latency with the right values; a 429 storm is
 * retried while the rate limit holds at the node; a second URL takes over when the first is down; a read that
 * cannot get an answer fails (never zero); a transaction whose answer was lost is mined once; a revert is an
 * answer, not retried.
 */
import { expect } from "chai";
import { createServer } from "node:net";
import { Interface, JsonRpcProvider, Network, Wallet, getAddress } from "ethers";
import { freePort, startAnvil, TEST_KEYS } from "../../demo/chain.ts";
import { ProcessGroup } from "../../demo/processes.ts";
import { startFaultProxy, type FaultProxy } from "../../sdk/node/faultProxy.ts";
import { JsonRpcClient, type RpcClientOptions } from "../../sdk/node/jsonRpc.ts";
import { parseCommand, UsageError } from "../../sdk/run/args.ts";
import { classifyError } from "../../sdk/node/errors.ts";
import { checkRpcUrl, rpcChainId, rpcProvider, staticProvider } from "../../sdk/node/contracts.ts";
import {
  FAULT_KINDS,
  newRpcStats,
  RateLimiter,
  resetRpcConfiguration,
  rpcSettings,
  type RpcStats,
} from "../../sdk/node/rpc.ts";

const NETWORK = Network.from(31337n);
const RICH = new Wallet(TEST_KEYS.owner).address;

describe("sdk/rpc: RPC faults as a way of life (anvil behind the fault proxy)", function () {
  this.timeout(60_000);
  const group = new ProcessGroup(() => {});
  let node: string;
  let truth: JsonRpcProvider;
  const proxies: FaultProxy[] = [];
  const clients: JsonRpcClient[] = [];

  before(async function () {
    node = await startAnvil(group, await freePort(0), {}, "rpc-faults");
    truth = new JsonRpcProvider(node, NETWORK, { staticNetwork: NETWORK, cacheTimeout: -1 });
  });

  afterEach(async function () {
    for (const c of clients.splice(0)) c.destroy();
    await Promise.all(proxies.splice(0).map((p) => p.stop()));
  });

  after(async function () {
    truth.destroy();
    await group.stopAll(3_000);
  });

  const proxy = async (o: Omit<Parameters<typeof startFaultProxy>[0], "target"> = {}) => {
    const p = await startFaultProxy({ target: node, ...o });
    proxies.push(p);
    return p;
  };
  const client = (url: string, rpc: RpcClientOptions = {}) => {
    const c = new JsonRpcClient(url, NETWORK, { staticNetwork: NETWORK, cacheTimeout: -1, batchMaxCount: 1 }, rpc);
    clients.push(c);
    return c;
  };
  const retried = (s: RpcStats) => FAULT_KINDS.reduce((n, k) => n + s.retries[k], 0);

  it("reads come through 429, 5xx, dropped answers, truncated bodies and latency, with the node's values", async function () {
    const p = await proxy({
      seed: 7,
      latencyMs: [5, 40],
      rate429: 0.1,
      rate5xx: 0.05,
      dropRate: 0.05,
      truncateRate: 0.1,
    });
    const stats = newRpcStats();
    const c = client(p.url, { stats });
    const [head, balance] = [await truth.getBlockNumber(), await truth.getBalance(RICH)];
    for (let i = 0; i < 40; i++) {
      expect(await c.getBlockNumber()).to.equal(head);
      expect(await c.getBalance(RICH)).to.equal(balance);
    }
    const block = await c.getBlock(0);
    expect(block?.hash).to.equal((await truth.getBlock(0))?.hash);
    for (const k of ["http429", "drop", "truncate", "http5xx"] as const) expect(p.counts[k], k).to.be.above(0);
    // Each injected fault was seen by the client and retried; none reached the caller.
    expect(stats.faults.http429).to.equal(p.counts.http429);
    expect(stats.faults.http5xx).to.equal(p.counts.http5xx);
    expect(stats.faults.reset).to.equal(p.counts.drop);
    expect(stats.faults.badJson).to.equal(p.counts.truncate);
    expect(retried(stats)).to.equal(p.counts.http429 + p.counts.http5xx + p.counts.drop + p.counts.truncate);
    expect(stats.exhausted).to.equal(0);
    expect(stats.requests).to.equal(p.counts.requests);
  });

  it("a 429 storm is retried with backoff while the rate limit holds at the node", async function () {
    const p = await proxy({ seed: 3, rate429: 0.6 });
    const stats = newRpcStats();
    const rps = 40;
    const c = client(p.url, { stats, rps, burst: 4 });
    const balance = await truth.getBalance(RICH);
    const reads = await Promise.all(Array.from({ length: 40 }, () => c.getBalance(RICH)));
    expect(reads.every((b) => b === balance)).to.equal(true);
    expect(stats.retries.http429).to.be.above(30);
    const perSecond = p.perSecond();
    // Every whole second: at most rps + burst requests reached the node (+4 for timers that fire late on a busy
    // machine and push a slot's request into the next second; without the limit the first second sees ~90).
    expect(Math.max(...perSecond), `requests per second at the node: ${perSecond}`).to.be.at.most(rps + 4 + 4);
    expect(p.counts.requests).to.be.above(rps); // the storm did last more than a second's worth of requests
  });

  it("Retry-After is honoured", async function () {
    let storm = true;
    const p = await proxy({ retryAfterS: 1, script: () => (storm ? "http429" : "pass") });
    setTimeout(() => (storm = false), 300);
    const stats = newRpcStats();
    const c = client(p.url, { stats, baseMs: 10, maxDelayMs: 20 });
    const t0 = performance.now();
    expect(await c.getBlockNumber()).to.equal(await truth.getBlockNumber());
    const took = performance.now() - t0;
    expect(took).to.be.at.least(950); // one 1 s wait, not the 10–20 ms backoff
    expect(p.counts.http429).to.equal(1);
  });

  it("fails over to the second URL when the first goes down, and stays there", async function () {
    const [a, b] = [await proxy(), await proxy()];
    const stats = newRpcStats();
    const c = client(`${a.url},${b.url}`, { stats, failoverAfter: 2 });
    const head = await truth.getBlockNumber();
    expect(await c.getBlockNumber()).to.equal(head);
    expect(c.currentUrl).to.equal(a.url);
    await a.stop();
    proxies.splice(proxies.indexOf(a), 1);
    expect(await c.getBlockNumber()).to.equal(head);
    expect(c.currentUrl).to.equal(b.url);
    expect(stats.failovers).to.equal(1);
    expect(stats.faults.refused + stats.faults.reset).to.equal(2);
    const before = b.counts.requests;
    for (let i = 0; i < 5; i++) expect(await c.getBlockNumber()).to.equal(head);
    expect(b.counts.requests - before).to.equal(5); // it stays on the one that answers
  });

  it("concurrent calls failing on the first URL move to the second once, and stay there", async function () {
    const dead = `http://127.0.0.1:${await closedPort()}`;
    const stats = newRpcStats();
    const c = client(`${dead},${node}`, { stats });
    const head = await truth.getBlockNumber();
    const heads = await Promise.all(Array.from({ length: 8 }, () => c.getBlockNumber()));
    expect(heads).to.deep.equal(Array(8).fill(head));
    expect(c.currentUrl).to.equal(node);
    expect(stats.failovers).to.equal(1);
  });

  it("a URL that refuses connections from the start is skipped", async function () {
    const dead = `http://127.0.0.1:${await closedPort()}`;
    const stats = newRpcStats();
    const c = client(`${dead},${node}`, { stats });
    expect(await c.getBalance(RICH)).to.equal(await truth.getBalance(RICH));
    expect(stats.failovers).to.equal(1);
  });

  it("a read that cannot get an answer fails within its time bound: an error, never zero or no logs", async function () {
    const p = await proxy({ rate429: 1 });
    const stats = newRpcStats();
    const c = client(p.url, { stats, budgetMs: 1_500, baseMs: 50, maxDelayMs: 400 });
    const t0 = performance.now();
    const failed = await c.getBalance(RICH).then(
      (v) => ({ value: v }),
      (e: Error & { code?: string }) => ({ error: e }),
    );
    const took = performance.now() - t0;
    expect(failed).to.have.property("error");
    expect((failed as { error: Error & { code?: string } }).error.code).to.equal("SERVER_ERROR");
    expect((failed as { error: Error }).error.message).to.match(/429/);
    expect(took).to.be.within(900, 3_000);
    expect(stats.exhausted).to.equal(1);
    expect(p.counts.requests).to.be.above(2);
    await c.getLogs({ fromBlock: 0, toBlock: "latest" }).then(
      () => expect.fail("getLogs gave an answer the node never sent"),
      (e: Error) => expect(e.message).to.match(/429/),
    );
    // Truncated bodies only: the same, and callers see it as an outage to retry later, not as a fatal error.
    p.set({ rate429: 0, truncateRate: 1 });
    const truncated = await c.getBlockNumber().then(
      () => expect.fail("a block number from truncated bodies"),
      (e: Error) => e,
    );
    expect(classifyError(truncated, new Interface([]))).to.equal("retryable");
    // Errors whose code is a number (a JSON-RPC error object, an EVM error) are no transport fault, and no crash.
    expect(classifyError(Object.assign(new Error("execution reverted"), { code: 3 }), new Interface([]))).to.equal(
      "fatal",
    );
    expect(classifyError({ code: -32000, message: "nonce too low", cause: { code: 1 } }, new Interface([]))).to.equal(
      "fatal",
    );
    // A dead node: the same.
    const dead = client(`http://127.0.0.1:${await closedPort()}`, { budgetMs: 800 });
    await dead.getBlockNumber().then(
      () => expect.fail("a block number from a dead node"),
      (e: Error & { code?: string }) => expect(e.code).to.equal("ECONNREFUSED"),
    );
  });

  it("a transaction whose answer was dropped is sent again harmlessly and mined once", async function () {
    let sends = 0;
    const p = await proxy({
      script: ({ methods }) => (methods.includes("eth_sendRawTransaction") && ++sends === 1 ? "drop" : "pass"),
    });
    const stats = newRpcStats();
    const c = client(p.url, { stats });
    const wallet = new Wallet(TEST_KEYS.arbiter, c);
    const to = getAddress("0x000000000000000000000000000000000000c0de");
    const [nonce, balance] = [await truth.getTransactionCount(wallet.address), await truth.getBalance(to)];
    const tx = await wallet.sendTransaction({ to, value: 1n });
    const receipt = await tx.wait();
    expect(receipt?.status).to.equal(1);
    expect(p.counts.methods.eth_sendRawTransaction).to.equal(2); // the dropped one, then its retry
    expect(p.counts.drop).to.equal(1);
    expect(stats.duplicateSends).to.equal(1);
    expect(await truth.getTransactionCount(wallet.address)).to.equal(nonce + 1);
    expect(await truth.getBalance(to)).to.equal(balance + 1n);
  });

  it("tx.wait() through a receipt poll that fails past the bound: unknown, it waits on (no unhandled rejection)", async function () {
    let failing = false;
    const p = await proxy({
      script: ({ methods }) => (failing && methods.includes("eth_getTransactionReceipt") ? "http429" : "pass"),
    });
    const stats = newRpcStats();
    const c = client(p.url, { stats, budgetMs: 300, baseMs: 20, maxDelayMs: 50 });
    c.pollingInterval = 100;
    const wallet = new Wallet(TEST_KEYS.verifier2, c);
    await truth.send("evm_setAutomine", [false]);
    try {
      const tx = await wallet.sendTransaction({ to: RICH, value: 1n });
      const waiting = tx.wait();
      const done = waiting.then(() => true);
      await until(() => (p.counts.methods.eth_getTransactionReceipt ?? 0) >= 2); // wait() is polling now
      failing = true;
      const failedBefore = stats.exhausted;
      await truth.send("evm_mine", []); // a new block: the poll for the receipt runs, and fails
      await until(() => stats.exhausted > failedBefore);
      await new Promise((r) => setTimeout(r, 300)); // where ethers' own poller threw an unhandled rejection
      expect(await Promise.race([done, new Promise((r) => setTimeout(() => r(false), 50))])).to.equal(false);
      failing = false;
      await truth.send("evm_mine", []); // the next block: asked again, answered
      expect((await waiting)?.status).to.equal(1);
    } finally {
      await truth.send("evm_setAutomine", [true]);
    }
  });

  it("a different transaction with a used nonce is still refused (the hash is checked)", async function () {
    const c = client(node);
    const wallet = new Wallet(TEST_KEYS.verifier1, c);
    const nonce = await truth.getTransactionCount(wallet.address);
    await (await wallet.sendTransaction({ to: RICH, value: 1n, nonce })).wait();
    await wallet.sendTransaction({ to: RICH, value: 2n, nonce }).then(
      () => expect.fail("a second transaction with the same nonce was called sent"),
      (e: Error) => expect(e.message).to.match(/nonce/i),
    );
  });

  it("a node-signed eth_sendTransaction is retried after a 429, never after a dropped answer (no second tx)", async function () {
    let sends = 0;
    let fault: "http429" | "drop" = "http429";
    const p = await proxy({
      script: ({ methods }) => (methods.includes("eth_sendTransaction") && ++sends === 1 ? fault : "pass"),
    });
    const c = client(p.url);
    const [from] = (await truth.send("eth_accounts", [])) as string[];
    const signer = await c.getSigner(from);
    const nonce = await truth.getTransactionCount(from);
    await (await signer.sendTransaction({ to: RICH, value: 1n })).wait();
    expect(p.counts.methods.eth_sendTransaction).to.equal(2); // turned away, then sent
    expect(await truth.getTransactionCount(from)).to.equal(nonce + 1);
    [sends, fault] = [0, "drop"];
    await signer.sendTransaction({ to: RICH, value: 1n }).then(
      () => expect.fail("a send whose answer was lost was called sent"),
      (e: Error) => expect(e.message).to.match(/socket hang up|reset/i),
    );
    expect(p.counts.methods.eth_sendTransaction).to.equal(3); // not repeated
    expect(await truth.getTransactionCount(from)).to.equal(nonce + 2); // it did land, once
  });

  it("a revert (a JSON-RPC error answer) is not retried", async function () {
    const reverter = "0x00000000000000000000000000000000000fa11e";
    await truth.send("anvil_setCode", [reverter, "0x60006000fd"]); // PUSH1 0 PUSH1 0 REVERT
    const p = await proxy();
    const stats = newRpcStats();
    const c = client(p.url, { stats, budgetMs: 3_000 });
    await c.call({ to: reverter, data: "0x12345678" }).then(
      () => expect.fail("a revert came back as a result"),
      (e: Error & { code?: string }) => expect(e.code).to.equal("CALL_EXCEPTION"),
    );
    await c.send("eth_getBalance", ["not an address", "latest"]).then(
      () => expect.fail("a bad parameter came back as a result"),
      (e: Error) => expect(e).to.be.instanceOf(Error),
    );
    expect(p.counts.methods.eth_call).to.equal(1);
    expect(p.counts.methods.eth_getBalance).to.equal(1);
    expect(retried(stats)).to.equal(0);
  });

  it("several URLs: the chain id comes from the first that answers, each URL is checked", async function () {
    const dead = `http://127.0.0.1:${await closedPort()}`;
    expect(await rpcChainId(`${dead},${node}`, 2_000)).to.equal(31337n);
    await rpcChainId(`${dead},${dead}`, 2_000).then(
      () => expect.fail("a chain id from two dead URLs"),
      (e: Error) => expect(e.message).to.match(/cannot reach the RPC/),
    );
    expect(() => checkRpcUrl(`${node},ftp://x`)).to.throw(UsageError, /got "ftp:\/\/x"/);
    expect(() => checkRpcUrl(",")).to.throw(UsageError);
  });

  it("the start-up chain id check rides out 429s and cut bodies, and fails fast when nothing listens", async function () {
    let n = 0;
    const p = await proxy({ script: () => (++n <= 2 ? "http429" : n === 3 ? "truncate" : "pass") });
    expect(await rpcChainId(p.url, 5_000)).to.equal(31337n);
    expect(p.counts.requests).to.equal(4);
    const t0 = performance.now();
    await rpcChainId(`http://127.0.0.1:${await closedPort()}`, 5_000).then(
      () => expect.fail("a chain id from a closed port"),
      (e: Error) => expect(e.message).to.match(/connection refused/),
    );
    expect(performance.now() - t0).to.be.below(1_000);
    p.set({ script: () => "http429" });
    await rpcChainId(p.url, 800).then(
      () => expect.fail("a chain id from a node that only answers 429"),
      (e: Error) => expect(e.message, e.message).to.match(/HTTP 429/),
    );
  });

  it("--rpc-rps and --poll-ms set the process's RPC settings; without them the local defaults stay", function () {
    try {
      const plain = staticProvider(node, 31337n, 1_000);
      expect(plain.pollingInterval).to.equal(500);
      plain.destroy();
      expect(rpcSettings().rps).to.equal(undefined);
      parseCommand(["--rpc-rps", "5", "--poll-ms", "2000"], {});
      expect(rpcSettings().rps).to.equal(5);
      const p = staticProvider(node, 31337n, 1_000);
      expect(p.pollingInterval).to.equal(2000);
      expect((p as JsonRpcClient).rpc).to.include({ rps: 5, budgetMs: 1_000 });
      const q = rpcProvider(node, 250);
      expect(q.pollingInterval).to.equal(2000);
      p.destroy();
      q.destroy();
      expect(() => parseCommand(["--rpc-rps", "fast"], {})).to.throw(UsageError, /--rpc-rps must be/);
      expect(() => parseCommand(["--poll-ms", "0"], {})).to.throw(UsageError, /--poll-ms must be/);
    } finally {
      resetRpcConfiguration();
    }
  });

  it("the rate limiter never lets more than burst + rps through in any second", function () {
    let now = 0;
    const l = new RateLimiter(10, 3, () => now);
    const sent: number[] = [];
    for (let i = 0; i < 200; i++) {
      const at = now + l.reserve();
      sent.push(at);
      now += 7; // callers arrive every 7 ms, far above 10/s
    }
    for (const t of sent) expect(sent.filter((s) => s >= t && s < t + 1000).length).to.be.at.most(13);
    expect(sent.slice(0, 3).every((s, i) => s === i * 7)).to.equal(true); // the burst goes at once
  });
});

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

async function until(ok: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 20));
  }
}
