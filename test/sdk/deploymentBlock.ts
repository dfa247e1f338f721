/**
 * sdk/node/deploymentBlock.ts: where the dashboard (its server's feed and the browser's Check any wallet) starts reading a
 * deployment's events — the escrow's first block with code, less a margin — so a public chain is not read from 0.
 */
import { expect } from "chai";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { deploymentFirstBlock, eventsFrom } from "../../sdk/node/deployment.ts";
import { DEPLOYMENT_MARGIN_BLOCKS, deploymentStartBlock } from "../../sdk/node/deploymentBlock.ts";
import { deployProtocol, ethers, networkHelpers } from "../helpers/fixture.ts";

describe("sdk: a deployment's first block", function () {
  it("is the escrow's first block with code less the margin, found in about log2(head) code reads", async function () {
    await networkHelpers.mine(5_000); // a chain with history before the deployment
    const before = await ethers.provider.getBlockNumber();
    const p = await deployProtocol();
    await networkHelpers.mine(100);
    const head = await ethers.provider.getBlockNumber();
    let reads = 0;
    const counting = new Proxy(ethers.provider, {
      get(target, key) {
        const v = Reflect.get(target, key);
        if (key !== "getCode" || typeof v !== "function") return typeof v === "function" ? v.bind(target) : v;
        return (...args: unknown[]) => {
          reads++;
          return v.apply(target, args);
        };
      },
    });
    const start = await deploymentStartBlock(counting, p.deployment.escrow, head);
    const escrowBlock = start + DEPLOYMENT_MARGIN_BLOCKS;
    expect(escrowBlock).to.be.greaterThan(before);
    expect(await ethers.provider.getCode(p.deployment.escrow, escrowBlock)).to.not.equal("0x");
    expect(await ethers.provider.getCode(p.deployment.escrow, escrowBlock - 1)).to.equal("0x");
    expect(reads).to.be.at.most(Math.ceil(Math.log2(head)) + 2);
  });

  it("names the address when the head holds no escrow there (a deployment file of another chain)", async function () {
    const head = await ethers.provider.getBlockNumber();
    const nobody = "0x000000000000000000000000000000000000dEaD";
    const err = await deploymentStartBlock(ethers.provider, nobody, head).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err?.message).to.equal(`no escrow contract at ${nobody} on this chain (block ${head})`);
  });

  it("reads the lowest receipt block from Ignition's journal; a line cut short is skipped; no journal: unknown", function () {
    const dir = mkdtempSync(path.join(tmpdir(), "gpuchain-journal-"));
    try {
      const file = path.join(dir, "deployed_addresses.json");
      expect(deploymentFirstBlock(file)).to.equal(undefined);
      const confirm = (block: number) =>
        JSON.stringify({ type: "TRANSACTION_CONFIRM", futureId: "M#X", receipt: { blockNumber: block, logs: [] } });
      const lines = [
        JSON.stringify({ type: "DEPLOYMENT_INITIALIZE", chainId: 31337 }),
        confirm(7),
        confirm(5),
        confirm(9),
        '{"type":"TRANSACTION_CONFIRM","receipt":{"blockNumber":3', // an interrupted write
      ];
      writeFileSync(path.join(dir, "journal.jsonl"), lines.join("\n"));
      expect(deploymentFirstBlock(file)).to.equal(5);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("event scans start at --from-block when given (0 included), else the deployment's first block, else 0", function () {
    expect(eventsFrom(12, { firstBlock: 40 })).to.equal(12);
    expect(eventsFrom(0, { firstBlock: 40 })).to.equal(0);
    expect(eventsFrom(undefined, { firstBlock: 40 })).to.equal(40);
    expect(eventsFrom(undefined, {})).to.equal(0);
  });
});
