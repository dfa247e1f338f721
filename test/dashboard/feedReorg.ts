/**
 * The dashboard server's feed (dashboard/server/feed.ts) across reorganisations of depth 1, 2 and 3 on anvil with the
 * protocol deployed through Ignition: a job the feed already streamed is replaced by another (`anvil_reorg`); the
 * feed drops the replaced blocks' entries and says so (a "reorg" entry), and the page's folds of its history — the
 * run state's events (dashboard/src/model/state.ts `foldAll`) and the books (dashboard/src/ledger.ts, sdk/rules/ledger.ts)
 * — equal those of a fresh feed that only ever saw the new chain, both for its kept history (a new viewer) and for
 * the stream a viewer connected all along received (the replaced events, then the "reorg" entry). And `npm start`'s
 * watcher (demo/watch.ts): its job's events rolled back and its status line folded again equal a fresh fold. And
 * the coordinator's chain view (jobs, providers and their stake books, fencing, track records), folded again
 * after the reorg, equals a fresh view's. The feed's confirmed block is head − depth.
 */
import { expect } from "chai";
import { rmSync } from "node:fs";
import path from "node:path";
import { HDNodeWallet, Mnemonic, Wallet, type ContractTransactionResponse, type JsonRpcProvider } from "ethers";
import { LiveFeed } from "../../dashboard/server/feed.ts";
import { foldAll } from "../../dashboard/src/model/state.ts";
import { foldNew, newLedgerFold } from "../../dashboard/src/ledger.ts";
import { deployLocal, freePort, startAnvil, TEST_KEYS } from "../../demo/chain.ts";
import { plain, rolledBackEvents, rolledBackLines, watchStatus } from "../../demo/watch.ts";
import type { LiveEvent } from "../../demo/render.ts";
import { decodeLogs } from "../../sdk/node/events.ts";
import { CoordinatorChainView } from "../../keepers/coordinator/chainView.ts";
import { keeperContext } from "../../keepers/context.ts";
import { createLogger } from "../../sdk/run/log.ts";
import { LogCursor, readLogs, type RawLog } from "../../sdk/node/logRange.ts";
import { ProcessGroup } from "../../demo/processes.ts";
import { connectProtocol, rpcProvider } from "../../sdk/node/contracts.ts";
import { loadDeployment, type Deployment } from "../../sdk/node/deployment.ts";
import type { Entry } from "../../sdk/run/recording.ts";
import { loadTemplate } from "../../workloads/index.ts";

describe("dashboard server: the feed across reorganisations (anvil)", function () {
  this.timeout(300_000);
  const group = new ProcessGroup(() => {});
  const deploymentId = `feed-reorg-${process.pid}`;
  let rpc: string;
  let chain: JsonRpcProvider;
  let d: Deployment;
  let templateId: string;
  const client = new Wallet(TEST_KEYS.client).address;
  const feeds: LiveFeed[] = [];
  const providers = [9, 10].map((i) =>
    HDNodeWallet.fromMnemonic(
      Mnemonic.fromPhrase("test test test test test test test test test test test junk"),
      `m/44'/60'/0'/0/${i}`,
    ),
  );

  before(async function () {
    rpc = await startAnvil(group, await freePort(0), {}, "feed-reorg-chain");
    d = loadDeployment(await deployLocal(rpc, deploymentId));
    chain = rpcProvider(rpc, 50);
    const send = async (tx: Promise<ContractTransactionResponse>) => (await tx).wait();
    const as = (key: string) => connectProtocol(d, new Wallet(key, chain));
    templateId = loadTemplate("blobs-tiny").templateId;
    await send(as(TEST_KEYS.owner).escrow.setTemplateApproval(templateId, true));
    const c = as(TEST_KEYS.client);
    await send(c.usdc.mint(client, 100_000_000n));
    await send(c.usdc.approve(d.escrow, 100_000_000n));
    for (const [i, w] of providers.entries()) {
      await chain.send("anvil_setBalance", [w.address, "0x56BC75E2D63100000"]);
      const p = connectProtocol(d, w.connect(chain));
      await send(p.registry.register(`prov-${i}`, 1_000n, 0, "x86_64 CPU", 4096));
      await send(p.usdc.mint(w.address, 10_000_000n));
      await send(p.usdc.approve(d.registry, 10_000_000n));
      await send(p.registry.depositStake(10_000_000n));
    }
  });

  after(async function () {
    for (const f of feeds) await f.stop();
    chain?.destroy();
    await group.stopAll(3_000);
    rmSync(path.join("ignition", "deployments", deploymentId), { recursive: true, force: true });
  });

  const request = (totalSteps: number) => ({
    templateId,
    totalSteps,
    checkpointInterval: 10,
    maxPricePerStep: 1_000n,
    budget: 100_000n,
    disputeWindow: 3_600n,
  });

  function feed(confirmations?: number): LiveFeed {
    const f = new LiveFeed({
      rpc,
      deployment: d,
      coordinatorUrl: () => undefined,
      collectorUrl: () => undefined,
      confirmations,
    });
    feeds.push(f);
    return f;
  }

  /** What the page folds from a feed's history: the events (without arrival times) and the books. */
  function folds(entries: readonly Entry[]) {
    const events = foldAll(entries).events.map(({ ms: _ms, ...e }) => e);
    const books = newLedgerFold();
    foldNew(books, foldAll(entries).events);
    return { events, ledger: books.ledger };
  }

  for (const depth of [1, 2, 3]) {
    it(`a reorg of depth ${depth} replacing a job the feed streamed: its folds equal a fresh feed's`, async function () {
      const live = feed();
      const received: Entry[] = []; // what a viewer connected all along got: the replaced events too
      live.subscribe((e) => received.push(e));
      await live.tick();
      const escrow = connectProtocol(d, new Wallet(TEST_KEYS.client, chain)).escrow;
      for (let i = 0; i < depth; i++) await (await escrow.createJob(request(10 * (i + 1)))).wait();
      await live.tick();
      const head = await chain.getBlockNumber();
      expect(live.indexedBlock).to.equal(head);
      const streamed = folds(live.entries).events.filter((e) => e.name === "JobCreated");
      const gone = streamed.find((e) => e.blockNumber === head - depth + 1);
      expect(gone, "the feed streamed a job in the first block the reorg replaces").to.not.equal(undefined);

      const data = escrow.interface.encodeFunctionData("createJob", [request(100 + 10 * depth)]);
      const nonce = await chain.getTransactionCount(client, head - depth); // the client's nonce at the ancestor
      const tx = { from: client, to: d.escrow, data, gas: "0x200000", nonce: `0x${nonce.toString(16)}` };
      await chain.send("anvil_reorg", [depth, [[tx, 0]]]);
      await live.tick();
      expect(live.reorgs.at(-1)).to.deep.equal({ from: head - depth + 1, removed: depth });
      expect(live.entries.filter((e) => e.source === "reorg").length).to.equal(1);

      const fresh = feed();
      await fresh.tick();
      expect(fresh.indexedBlock).to.equal(live.indexedBlock);
      const after = folds(live.entries);
      expect(after.events).to.deep.equal(folds(fresh.entries).events);
      expect(after.ledger).to.deep.equal(folds(fresh.entries).ledger);
      expect(folds(received), "the viewer's fold of its stream").to.deep.equal(folds(fresh.entries));
      expect(after.ledger, "a complete ledger").to.not.equal(null);
      const steps = after.events.filter((e) => e.name === "JobCreated").map((e) => String(e.args.totalSteps));
      expect(steps).to.include(String(100 + 10 * depth));
      expect(after.events.some((e) => e.transactionHash === gone!.transactionHash)).to.equal(false);
      await live.stop();
      await fresh.stop();
    });
  }

  it("the confirmed block is the head less the confirmation depth (local default 0)", async function () {
    const local = feed();
    const deep = feed(2);
    await local.tick();
    await deep.tick();
    expect(local.snapshot().confirmedBlock).to.equal(local.headBlock);
    expect(deep.snapshot().confirmedBlock).to.equal(deep.headBlock! - 2);
  });

  for (const depth of [1, 2, 3]) {
    it(`npm start's watcher: a reorg of depth ${depth} replacing the assignment it saw, its status line = a fresh fold`, async function () {
      const client = connectProtocol(d, new Wallet(TEST_KEYS.client, chain)).escrow;
      const coordinator = connectProtocol(d, new Wallet(TEST_KEYS.coordinator, chain)).escrow;
      const receipt = await (await client.createJob(request(10))).wait();
      const jobId = BigInt(client.interface.parseLog(receipt!.logs.find((l) => l.address === d.escrow)!)!.args.jobId);
      await (await coordinator.assign(jobId, providers[0].address)).wait();
      for (let i = 1; i < depth; i++) await chain.send("evm_mine", []);
      const head = await chain.getBlockNumber();
      const names = Object.fromEntries(providers.map((w, i) => [w.address.toLowerCase(), `prov-${i}`]));
      const jobEvents = (logs: readonly RawLog[]): LiveEvent[] =>
        decodeLogs(client.interface, logs)
          .map((e) => ({ name: e.eventName, args: plain(e.args), blockNumber: e.blockNumber }))
          .filter((e) => e.args.jobId !== undefined && BigInt(e.args.jobId as bigint) === jobId);

      // What the watcher does: follow the escrow with the cursor, keep the job's events, fold the status line.
      const cursor = new LogCursor(chain, { address: d.escrow }, receipt!.blockNumber);
      const first = await cursor.poll();
      let events = jobEvents(first.logs);
      expect(watchStatus(events, names)).to.include({ holder: "prov-0", epoch: 1n });

      const data = coordinator.interface.encodeFunctionData("assign", [jobId, providers[1].address]);
      const from = new Wallet(TEST_KEYS.coordinator).address;
      const nonce = await chain.getTransactionCount(from, head - depth);
      const tx = { from, to: d.escrow, data, gas: "0x200000", nonce: `0x${nonce.toString(16)}` };
      await chain.send("anvil_reorg", [depth, [[tx, 0]]]);
      const r = await cursor.poll();
      expect(r.reorged).to.deep.equal({ from: head - depth + 1, removed: depth });
      const told = rolledBackLines(events, r.reorged!, names);
      expect(told[0]).to.contain(`blocks from ${head - depth + 1} replaced`);
      expect(told.slice(1), "the assignment it had narrated is said to be undone").to.have.length(1);
      expect(told[1]).to.match(/undone \(block \d+\): .*prov-0/);
      events = [...rolledBackEvents(events, r.reorged!.from), ...jobEvents(r.logs)];

      const fresh = jobEvents(await readLogs(chain, { address: d.escrow }, 0, await chain.getBlockNumber()));
      expect(events).to.deep.equal(fresh);
      expect(watchStatus(events, names)).to.deep.equal(watchStatus(fresh, names));
      expect(watchStatus(events, names)).to.include({ holder: "prov-1", epoch: 1n });
    });
  }

  for (const depth of [1, 2, 3]) {
    it(`the coordinator's chain view: a reorg of depth ${depth} replacing an assignment, folded again = a fresh view`, async function () {
      const lines: string[] = [];
      const ctx = await keeperContext({
        deployment: d,
        provider: chain,
        chainId: 31337n,
        logger: createLogger({ component: "coordinator", write: (l) => lines.push(l) }),
      });
      const refreshed = async (view: CoordinatorChainView) => {
        const block = await chain.getBlockNumber();
        await view.refresh(block, (await view.head(block)).jobCount);
        return view;
      };
      const picture = (v: CoordinatorChainView) => ({
        jobs: [...v.jobs.entries()].sort(([a], [b]) => (a < b ? -1 : 1)),
        providers: [...v.providers.entries()].sort(),
        registered: [...v.registered].sort(),
        fenced: [...v.fenced.entries()].sort(),
        records: [...v.history.records.entries()].sort(),
      });
      const view = await refreshed(new CoordinatorChainView(ctx, 0));
      const client = connectProtocol(d, new Wallet(TEST_KEYS.client, chain)).escrow;
      const coordinator = connectProtocol(d, new Wallet(TEST_KEYS.coordinator, chain)).escrow;
      await (await client.createJob(request(10))).wait();
      const jobId = await client.jobCount();
      await (await coordinator.assign(jobId, providers[0].address)).wait();
      for (let i = 1; i < depth; i++) await chain.send("evm_mine", []);
      const head = await chain.getBlockNumber();
      await refreshed(view);
      expect(view.jobs.get(jobId)?.provider.toLowerCase()).to.equal(providers[0].address.toLowerCase());

      const data = coordinator.interface.encodeFunctionData("assign", [jobId, providers[1].address]);
      const from = new Wallet(TEST_KEYS.coordinator).address;
      const nonce = await chain.getTransactionCount(from, head - depth);
      const tx = { from, to: d.escrow, data, gas: "0x200000", nonce: `0x${nonce.toString(16)}` };
      await chain.send("anvil_reorg", [depth, [[tx, 0]]]);
      await refreshed(view);
      expect(view.reorgs).to.equal(1);
      expect(lines.join("\n")).to.contain("chain reorganisation");
      const fresh = await refreshed(new CoordinatorChainView(ctx, 0));
      expect(picture(view)).to.deep.equal(picture(fresh));
      expect(view.jobs.get(jobId)?.provider.toLowerCase()).to.equal(providers[1].address.toLowerCase());
    });
  }
});
