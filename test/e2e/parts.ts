/**
 * Parts of `npm start` on their own: the live status line, and the external mode's network naming and funding
 * wait (against a real anvil on a public test network's chain id: funding is watched at every block).
 */
import { expect } from "chai";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { JsonRpcProvider, Wallet } from "ethers";
import { freePort, startAnvil, TEST_KEYS } from "../../demo/chain.ts";
import { externalNetwork, ROLES } from "../../demo/network.ts";
import { ProcessGroup } from "../../demo/processes.ts";
import { StatusLine, statusText } from "../../demo/status.ts";
import { writeKey } from "../../sdk/run/keys.ts";
import { setDevBalance } from "../../sdk/node/faucet.ts";

describe("npm start parts: the live status line", function () {
  it("shows step, holder, epoch, pending checkpoint and signatures on one line", function () {
    const s = { totalSteps: 600, step: 120, holder: "bob", epoch: 3n, pendingStep: 200, signed: 1, threshold: 2 };
    expect(statusText(s)).to.equal(
      "step 120/600 · holder bob · epoch 3 · checkpoint 200 pending · verifiers signed 1/2",
    );
    expect(statusText({ totalSteps: 10 })).to.equal(
      "step 0/10 · holder — · epoch 0 · no checkpoint pending · verifiers signed 0/2",
    );
  });

  it("on a TTY: log lines print above it, it is redrawn, and after stop() it stays gone", function () {
    const printed: string[] = [];
    let screen = "";
    const line = new StatusLine(
      (l) => printed.push(l),
      true,
      60,
      (t) => (screen += t),
    );
    line.update({ step: 5, holder: "alice" });
    expect(screen).to.equal(
      "\r\x1b[Kstep 5/60 · holder alice · epoch 0 · no checkpoint pending · verifiers signed 0/2",
    );
    screen = "";
    line.line("[chain] something happened");
    expect(printed).to.deep.equal(["[chain] something happened"]);
    expect(screen.startsWith("\r\x1b[K")).to.equal(true); // cleared before the log line, then redrawn
    expect(screen).to.contain("step 5/60");
    line.stop();
    screen = "";
    line.update({ step: 6 });
    line.line("after");
    expect(screen).to.equal("");
  });

  it("off a TTY it writes nothing of its own", function () {
    let screen = "";
    const line = new StatusLine(
      () => {},
      false,
      60,
      (t) => (screen += t),
    );
    line.update({ step: 1 });
    line.line("x");
    line.stop();
    expect(screen).to.equal("");
  });
});

describe("npm start parts: an existing deployment on another network", function () {
  this.timeout(60_000);
  const group = new ProcessGroup(() => {});
  const keysDir = mkdtempSync(path.join(tmpdir(), "gpuchain-keys-"));
  let rpc: string;
  let provider: JsonRpcProvider;

  before(async function () {
    rpc = await startAnvil(group, await freePort(0), { chainId: 84532 });
    provider = new JsonRpcProvider(rpc, undefined, { staticNetwork: true, cacheTimeout: -1 });
    for (const role of ROLES) writeKey(path.join(keysDir, `${role}.key`), TEST_KEYS[role]);
  });

  after(async function () {
    provider.destroy();
    await group.stopAll(3_000);
    rmSync(keysDir, { recursive: true, force: true });
  });

  it("names the network by its chain id", async function () {
    const net = await externalNetwork(rpc, "unused.json", keysDir);
    expect(net.badge).to.equal("Existing deployment on chain 84532 (Base Sepolia)");
    expect(net.local).to.equal(false);
  });

  it("waits for gas funding, asks once naming the RPC, and sees a faucet that mines no block (hardhat_setBalance)", async function () {
    const net = await externalNetwork(rpc, "unused.json", keysDir);
    const fresh = Wallet.createRandom().address;
    const notes: string[] = [];
    let done = false;
    const waiting = net.fundGas(provider, fresh, (l) => notes.push(l)).then(() => (done = true));
    // Blocks come and go (other transactions) without the funding: it keeps waiting, asking only once.
    const other = new Wallet(TEST_KEYS.keeper, provider);
    for (let i = 0; i < 2; i++) await (await other.sendTransaction({ to: other.address, value: 0n })).wait();
    await new Promise((r) => setTimeout(r, 2_500));
    expect(done).to.equal(false);
    expect(notes).to.deep.equal([
      `fund ${fresh} with test ETH for gas (a development node: npx gpuchain faucet ${fresh} --rpc ` +
        `${provider._getConnection().url}); checking its balance every 2 s …`,
    ]);
    // what `gpuchain faucet` does on a development node: the balance changes, no block is mined (before, the wait
    // looked only at new blocks and hung until some other transaction mined one)
    const head = await provider.getBlockNumber();
    await setDevBalance(provider, fresh, 10n ** 15n);
    await waiting;
    expect(await provider.getBlockNumber(), "no block was mined meanwhile").to.equal(head);
    expect(notes[1]).to.equal(`${fresh} funded`);
  });
});
