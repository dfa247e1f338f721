/**
 * `deviceModel` had no length cap: a provider registers (and updates) its machine description on
 * chain, and the registry stores any length, so one registration could push kilobytes to every dashboard viewer.
 * The cap is MAX_DEVICE_MODEL_BYTES = 64 bytes of UTF-8 (sdk/run/machine.ts, the registry's name bound); the
 * dashboard's live feed forwards at most that of a registered or updated model. Real chain (Hardhat's simulated
 * one, served over HTTP by a small JSON-RPC bridge), the real feed reading it.
 */
import { expect } from "chai";
import { Wallet } from "ethers";
import { LiveFeed } from "../../dashboard/server/feed.ts";
import { capDeviceModel, deviceModelProblem, MAX_DEVICE_MODEL_BYTES } from "../../sdk/run/machine.ts";
import * as fx from "../helpers/fixture.ts";
import { rpcBridge } from "../helpers/rpcBridge.ts";

const bytes = (s: string) => Buffer.byteLength(s, "utf8");

describe("adversary: a device model is capped at 64 bytes", function () {
  describe("the rule (sdk/run/machine.ts)", function () {
    it("63, 64 bytes pass; 65 is refused with the reason; a real model is unchanged", function () {
      expect(MAX_DEVICE_MODEL_BYTES).to.equal(64);
      expect(deviceModelProblem("x".repeat(63))).to.equal(undefined);
      expect(deviceModelProblem("x".repeat(64))).to.equal(undefined);
      expect(deviceModelProblem("x".repeat(65))).to.equal("device model is 65 bytes; at most 64 (UTF-8)");
      expect(deviceModelProblem("é".repeat(33))).to.match(/66 bytes/); // 33 characters, 66 bytes
      expect(deviceModelProblem("")).to.match(/non-empty/);
      expect(deviceModelProblem("H200\nfake log line")).to.match(/control characters/);
      expect(deviceModelProblem(42)).to.match(/non-empty string/);
      for (const m of ["NVIDIA H200", "x86_64 CPU", "x".repeat(64)]) expect(capDeviceModel(m)).to.equal(m);
    });

    it("capping: within 64 bytes, ends in …, never half a character, control characters gone, idempotent", function () {
      for (const long of [
        "x".repeat(65),
        "x".repeat(100_000),
        "é".repeat(40),
        "🚀".repeat(30),
        "ab\u0000\u001b[2J".repeat(30),
      ]) {
        const capped = capDeviceModel(long);
        expect(bytes(capped), long.slice(0, 8)).to.be.at.most(MAX_DEVICE_MODEL_BYTES);
        expect(deviceModelProblem(capped)).to.equal(undefined);
        expect(capped.endsWith("…")).to.equal(true);
        expect(capped).not.to.include("\uFFFD");
        expect(capDeviceModel(capped)).to.equal(capped);
      }
      expect(capDeviceModel("x".repeat(65))).to.equal("x".repeat(61) + "…");
      expect(capDeviceModel("  NVIDIA\tH200 \n")).to.equal("NVIDIA H200");
    });
  });

  describe("the dashboard's live feed on a real chain", function () {
    this.timeout(120_000);
    let bridge: Awaited<ReturnType<typeof rpcBridge>>;
    before(async () => (bridge = await rpcBridge(fx.connection.provider)));
    after(async () => bridge?.close());

    it("a provider registered and updated with 10 000- and 5 000-byte models: viewers get at most 64 bytes", async function () {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      const spammer = new Wallet(fx.ethers.id("lows-device-model"), fx.ethers.provider);
      await fx.networkHelpers.setBalance(spammer.address, 10n ** 20n);
      const huge = "A".repeat(10_000);
      await p.registry.connect(spammer).register("spammer", 900n, fx.DeviceKind.GPU, huge, 8_192);
      await p.registry.connect(spammer).update(900n, fx.DeviceKind.GPU, "é".repeat(2_500), 8_192);
      // The chain keeps what it was given: the cap is the readers'.
      expect((await p.registry.providerOf(spammer.address)).deviceModel).to.have.length(2_500);

      const feed = new LiveFeed({
        rpc: bridge.url,
        deployment: p.deployment,
        coordinatorUrl: () => undefined,
        collectorUrl: () => undefined,
        pollMs: 60_000,
      });
      try {
        await feed.tick();
        type Ev = { name: string; args: { provider: string; deviceModel: string } };
        const events = feed.entries.filter((e) => e.kind === "event").map((e) => e.data as Ev);
        const mine = events.filter((e) => e.args.provider === spammer.address);
        expect(mine.map((e) => e.name)).to.deep.equal(["ProviderRegistered", "ProviderUpdated"]);
        expect(mine[0].args.deviceModel).to.equal("A".repeat(61) + "…");
        expect(mine[1].args.deviceModel).to.equal("é".repeat(30) + "…");
        for (const e of mine) expect(bytes(e.args.deviceModel)).to.be.at.most(MAX_DEVICE_MODEL_BYTES);
        // Control: the fixture's honest providers' models come through unchanged.
        const honest = events.find((e) => e.name === "ProviderRegistered" && e.args.provider === p.provider1.address);
        expect(honest?.args.deviceModel).to.equal((await p.registry.providerOf(p.provider1.address)).deviceModel);
        expect(JSON.stringify(feed.entries).length).to.be.below(huge.length);
      } finally {
        await feed.stop();
      }
    });
  });
});
