/** sdk/words/sentences.ts: one sentence per contract event, wherever a person reads one (feed, npm start, explain). */
import { expect } from "chai";
import type { EventFragment } from "ethers";
import { protocolInterfaces } from "../../sdk/node/contracts.ts";
import { describeEvent, nameFrom } from "../../sdk/words/sentences.ts";

/** A plausible value per ABI type: addresses from a small pool, so the lookup can name them. */
function argsOf(fragment: EventFragment, addresses: string[]): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  fragment.inputs.forEach((p, i) => {
    if (p.type === "address") args[p.name] = addresses[i % addresses.length];
    else if (p.type === "bool") args[p.name] = true;
    else if (p.type === "string") args[p.name] = "alice";
    else if (p.type.startsWith("bytes")) args[p.name] = `0x${"ab".repeat(32)}`;
    else args[p.name] = 1_500_000n;
  });
  return args;
}

describe("sdk/sentences: the one event describer", function () {
  const { escrow, registry } = protocolInterfaces();
  const fragments: EventFragment[] = [];
  escrow.forEachEvent((f) => fragments.push(f));
  registry.forEachEvent((f) => fragments.push(f));
  const addresses = ["0x1111111111111111111111111111111111111111", "0x2222222222222222222222222222222222222222"];
  const names = nameFrom({ [addresses[0]]: "alice", [addresses[1]]: "verifier2" });

  it("says every event of both contracts as a sentence, naming addresses through the lookup", function () {
    const bare = fragments.filter((f) => f.name !== "EIP712DomainChanged"); // OpenZeppelin's, nothing to tell
    expect(bare.length).to.be.greaterThan(30);
    for (const f of bare) {
      const text = describeEvent({ name: f.name, args: argsOf(f, addresses) }, names, 0n);
      expect(text, f.name).to.not.equal(f.name);
      expect(text, `${f.name}: no address left unnamed`).to.not.match(/0x[0-9a-fA-F]{40}/);
      expect(text, `${f.name}: no "undefined"`).to.not.contain("undefined");
    }
  });

  it("shows amounts and prices with 6 decimals, deadlines as ISO times; bigints and decimal strings alike", function () {
    const assigned = { jobId: "3", provider: "0x1111111111111111111111111111111111111111", epoch: 2n };
    expect(
      describeEvent({ name: "ProviderAssigned", args: { ...assigned, pricePerStep: "1000", resumeStep: 100 } }, names),
    ).to.equal("job 3 assigned to alice (epoch 2) at 0.001000 USDC/step, resuming from step 100");
    const settled = { jobId: 1n, refund: 200_000n, providersPaid: "700000", bondReturned: 0n, bondForfeited: 0n };
    expect(describeEvent({ name: "JobSettled", args: settled }, names)).to.equal(
      "job 1 settled: providers paid 0.700000 USDC, client refund 0.200000 USDC",
    );
    const verdict = { jobId: 1n, modelHash: "0xabcdef0123456789", metric: 9_712n, passed: true, newEpoch: 4n };
    const words = (job: unknown, m: bigint) =>
      String(job) === "1" ? `${Number(m) / 100} % held-out accuracy` : undefined;
    expect(
      describeEvent(
        { name: "VerdictSubmitted", args: { ...verdict, disputeDeadline: 1_796_114_223n } },
        names,
        undefined,
        words,
      ),
    )
      .to.contain("97.12 % held-out accuracy, passed; dispute window until 2026-12-01T08:37:03Z")
      .and.to.contain("model 0xabcdef01…");
    // a job whose template the caller does not know: the bare number, never a guess at its unit
    expect(
      describeEvent(
        { name: "VerdictSubmitted", args: { ...verdict, jobId: 2n, disputeDeadline: 0n } },
        names,
        0n,
        words,
      ),
    ).to.contain("metric 9712, passed");
    expect(
      describeEvent({ name: "VerdictSubmitted", args: { ...verdict, disputeDeadline: 3_600n } }, names, 0n),
    ).to.contain("until 1970-01-01T01:00:00Z (in 1 h)");
  });

  it("names each unassign reason from the one table; an unknown one says so", function () {
    const unassigned = (reason: number) =>
      describeEvent(
        {
          name: "ProviderUnassigned",
          args: { jobId: 1n, provider: "0x1111111111111111111111111111111111111111", reason, newEpoch: 2n },
        },
        names,
      );
    expect(unassigned(0)).to.equal(
      "alice unassigned from job 1 (the coordinator took the job away (no heartbeat or no progress within its bounds)); epoch is now 2, so its further writes are rejected",
    );
    expect(unassigned(1)).to.contain("(its on-chain lease lapsed)");
    expect(unassigned(2)).to.contain("(its checkpoint was refused by the Quality Guard)");
    expect(unassigned(7)).to.contain("(reason 7, unknown to this code)");
  });

  it("an address the lookup does not know goes through the caller's fallback", function () {
    const short = nameFrom({}, (a) => a.slice(0, 10));
    expect(describeEvent({ name: "Withdrawn", args: { account: "0xABCDEF0123456789", amount: 1n } }, short)).to.equal(
      "0xABCDEF01 withdrew 0.000001 USDC",
    );
    expect(describeEvent({ name: "SomethingNew", args: {} }, short)).to.equal("SomethingNew");
  });
});
