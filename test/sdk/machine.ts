/** Honest badges: a machine identity in the signed beat, "Real, separate machine" only when it differs. */
import { expect } from "chai";
import { Wallet } from "ethers";
import { checkHeartbeat, signHeartbeat } from "../../sdk/rules/heartbeat.ts";
import { machineBadge, machineId } from "../../sdk/run/machine.ts";

describe("sdk: machine identity and badges", function () {
  it("is a stable hash (never the raw id), the same for every process on this machine", function () {
    expect(machineId()).to.match(/^0x[0-9a-f]{32}$/);
    expect(machineId()).to.equal(machineId());
  });

  it("says 'Real, separate machine' only for another machine's identity; namespaces here never do", function () {
    const here = machineId();
    expect(machineBadge("0x" + "ab".repeat(16), here)).to.equal("Real, separate machine");
    expect(machineBadge(here, here)).to.equal(undefined);
    expect(machineBadge(here.toUpperCase().replace("0X", "0x"), here, true)).to.equal("Separate hosts on one machine");
    expect(machineBadge(undefined, here, true)).to.equal("Separate hosts on one machine");
  });

  it("the machine identity is signed: a beat claiming another machine in transit is refused", async function () {
    const w = new Wallet(Wallet.createRandom().privateKey);
    const scope = { chainId: "31337", escrow: Wallet.createRandom().address };
    const now = Date.now();
    const h = await signHeartbeat(w, {
      ...scope,
      machine: machineId(),
      provider: w.address,
      jobId: "0",
      epoch: "0",
      step: 0,
      sentAt: now,
    });
    expect(checkHeartbeat(h, scope, now, undefined)).to.deep.equal({ ok: true });
    expect(checkHeartbeat({ ...h, machine: "0x" + "cd".repeat(16) }, scope, now, undefined).ok).to.equal(false);
  });
});
