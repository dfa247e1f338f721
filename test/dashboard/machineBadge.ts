// "Real, separate machine" (a physical GPU on another computer): the badge was defined but never given to anyone
// (sdk/run/machine.ts machineBadge was called only from tests). The dashboard server compares the machine identity a
// provider signs into its heartbeats with its own (dashboard/server/feed.ts) and says it in the stream; the page's
// fold (dashboard/src/model/state.ts) gives the badge only to a provider that also reported a GPU to the registry.
import { expect } from "chai";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { LiveFeed } from "../../dashboard/server/feed.ts";
import { foldAll, SEPARATE_MACHINE } from "../../dashboard/src/model/state.ts";
import { freePort } from "../../demo/chain.ts";
import { machineId } from "../../sdk/run/machine.ts";
import type { Entry } from "../../sdk/run/recording.ts";

const A = "0x" + "a1".repeat(20);
const B = "0x" + "b2".repeat(20);
const C = "0x" + "c3".repeat(20);
const OTHER = "0x" + "ab".repeat(16);

const registered = (provider: string, kind: 0 | 1, block: number): Entry => ({
  ms: block,
  kind: "event",
  source: "chain",
  data: {
    name: "ProviderRegistered",
    args: {
      provider,
      name: `p${block}`,
      pricePerStep: "1000",
      kind: String(kind),
      deviceModel: "NVIDIA H200",
      memoryMiB: "143771",
    },
    blockNumber: block,
    transactionHash: "0x" + "00".repeat(32),
    logIndex: 0,
    contract: "registry",
  },
});
const machine = (provider: string, separateMachine: boolean, ms = 100): Entry => ({
  ms,
  kind: "log",
  source: provider.slice(0, 10),
  data: { component: "agent", msg: "machine", provider, separateMachine },
});
const badgesOf = (entries: Entry[], who: string) => [...foldAll(entries).providers.get(who)!.badges];

describe("dashboard: the 'Real, separate machine' badge, from the providers' signed heartbeats", function () {
  it("a GPU on another machine gets it; a GPU here, a CPU elsewhere, or nobody saying, do not", function () {
    expect(badgesOf([registered(A, 1, 1), machine(A, true)], A)).to.include(SEPARATE_MACHINE);
    expect(badgesOf([machine(A, true, 0), registered(A, 1, 1)], A), "whatever the order").to.include(SEPARATE_MACHINE);
    expect(badgesOf([registered(A, 1, 1), machine(A, false)], A)).to.not.include(SEPARATE_MACHINE);
    expect(badgesOf([registered(A, 0, 1), machine(A, true)], A)).to.not.include(SEPARATE_MACHINE);
    expect(badgesOf([registered(A, 1, 1)], A)).to.not.include(SEPARATE_MACHINE);
  });

  it("is taken away when it stops being true (beats from this machine again)", function () {
    expect(badgesOf([registered(A, 1, 1), machine(A, true, 100), machine(A, false, 200)], A)).to.not.include(
      SEPARATE_MACHINE,
    );
  });

  describe("the server's feed", function () {
    let coordinator: Server;
    let beats: Record<string, unknown>[] = [];
    before(async function () {
      coordinator = createServer((req, res) => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(req.url === "/heartbeats" ? JSON.stringify({ now: Date.now(), beats }) : JSON.stringify({}));
      });
      await new Promise<void>((r) => coordinator.listen(0, "127.0.0.1", () => r()));
    });
    after(() => new Promise<void>((r) => coordinator.close(() => r())));

    const beat = (provider: string, extra: Record<string, unknown> = {}) => ({
      provider,
      jobId: "0",
      epoch: "0",
      step: 0,
      loss: null,
      stepsPerSecond: null,
      ageMs: 200,
      ...extra,
    });

    async function machineLines(): Promise<Record<string, unknown>[]> {
      const dead = `http://127.0.0.1:${await freePort(0)}`;
      const url = `http://127.0.0.1:${(coordinator.address() as AddressInfo).port}`;
      const d = { escrow: A, registry: B, usdc: C, verifierSafe: C } as never;
      const feed = new LiveFeed({ rpc: dead, deployment: d, coordinatorUrl: url, collectorUrl: dead });
      try {
        await feed.tick();
        await feed.tick(); // said once, not at every poll
        return feed.entries.map((e) => e.data as Record<string, unknown>).filter((x) => x.msg === "machine");
      } finally {
        await feed.stop();
      }
    }

    it("says which providers beat from another machine than the server's, once each", async function () {
      beats = [beat(A, { machine: OTHER }), beat(B, { machine: machineId().toUpperCase().replace("0X", "0x") })];
      const lines = await machineLines();
      expect(lines.map((l) => [l.provider, l.separateMachine])).to.deep.equal([
        [A, true],
        [B, false],
      ]);
    });

    it("a coordinator that does not list the beat's machine leaves it unknown: nothing is said", async function () {
      beats = [beat(A), beat(B, { machine: "not hex" })];
      expect(await machineLines()).to.deep.equal([]);
    });
  });
});
