/**
 * sdk/node/logRange.ts `readLogs`, the one way to read logs, on a simulated chain: the same logs as ethers' `getLogs`
 * (address, topics, data, block, index, transaction), over JSON-RPC and through a provider without `send`, and in
 * halved spans where a node refuses a wide range.
 */
import { expect } from "chai";
import type { Provider } from "ethers";
import { readLogs } from "../../sdk/node/logRange.ts";
import { createJob, deployProtocol, ethers, networkHelpers } from "../helpers/fixture.ts";

describe("sdk: raw log reads", function () {
  it("returns what getLogs returns, with or without JSON-RPC send, in halved spans when a range is refused", async function () {
    const p = await networkHelpers.loadFixture(deployProtocol);
    for (let i = 0; i < 4; i++) await createJob(p);
    const head = await ethers.provider.getBlockNumber();
    const filter = { address: [p.deployment.escrow, p.deployment.registry] };
    const expected = (await ethers.provider.getLogs({ ...filter, fromBlock: 0, toBlock: head })).map((l) => ({
      address: l.address,
      topics: [...l.topics],
      data: l.data,
      blockNumber: l.blockNumber,
      index: l.index,
      transactionHash: l.transactionHash,
      blockHash: l.blockHash,
    }));
    expect(expected.length).to.be.greaterThan(4);
    const raw = await readLogs(ethers.provider, filter, 0, head);
    expect(raw.map((l) => ({ ...l, address: ethers.getAddress(l.address), topics: [...l.topics] }))).to.deep.equal(
      expected,
    );
    const withoutSend = { getLogs: (f: never) => ethers.provider.getLogs(f) } as unknown as Provider;
    const viaGetLogs = await readLogs(withoutSend, filter, 0, head);
    expect(viaGetLogs.map((l) => ({ ...l, topics: [...l.topics] }))).to.deep.equal(expected);
    // A node that refuses spans wider than 2 blocks: asked again in halves, the same logs.
    const spans: number[] = [];
    const narrow = {
      async send(method: string, params: { fromBlock: string; toBlock: string }[]) {
        const span = Number(params[0].toBlock) - Number(params[0].fromBlock) + 1;
        spans.push(span);
        if (span > 2) throw new Error("block range too large");
        return ethers.provider.send(method, params);
      },
    } as unknown as Provider;
    expect((await readLogs(narrow, filter, 0, head, 8)).length).to.equal(expected.length);
    expect(spans.slice(0, 3)).to.deep.equal([8, 4, 2]);
  });
});
