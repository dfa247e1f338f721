import { expect } from "chai";
import * as fx from "../helpers/fixture.ts";

describe("ProviderRegistry", function () {
  describe("register", function () {
    it("register: records the provider as active with its offer and emits ProviderRegistered", async function () {
      const { registry, stranger } = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      await expect(registry.connect(stranger).register("rig-7", 750n, fx.DeviceKind.GPU, "RTX 4090", 24_564))
        .to.emit(registry, "ProviderRegistered")
        .withArgs(stranger.address, "rig-7", 750n, fx.DeviceKind.GPU, "RTX 4090", 24_564);
      const record = await registry.providerOf(stranger.address);
      expect(record.name).to.equal("rig-7");
      expect(record.deviceModel).to.equal("RTX 4090");
      expect(record.pricePerStep).to.equal(750n);
      expect(record.memoryMiB).to.equal(24_564n);
      expect(record.kind).to.equal(BigInt(fx.DeviceKind.GPU));
      expect(record.active).to.equal(true);
      expect(record.registeredAt).to.equal(BigInt(await fx.networkHelpers.time.latest()));
      expect(await registry.isActive(stranger.address)).to.equal(true);
      expect(await registry.quote(stranger.address)).to.deep.equal([750n, 24_564n, true]);
    });

    it("register: accepts a name of exactly MAX_NAME_LENGTH (64) bytes", async function () {
      const { registry, stranger } = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      await expect(registry.connect(stranger).register("x".repeat(64), 1n, fx.DeviceKind.CPU, "", 1)).to.emit(
        registry,
        "ProviderRegistered",
      );
    });

    it("register: reverts with ProviderRegistryAlreadyRegistered when the caller is registered", async function () {
      const { registry, provider1 } = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      await expect(registry.connect(provider1).register("again", 1n, fx.DeviceKind.CPU, "cpu", 1))
        .to.be.revertedWithCustomError(registry, "ProviderRegistryAlreadyRegistered")
        .withArgs(provider1.address);
    });

    it("register: reverts with ProviderRegistryInvalidName when the name is empty or over 64 bytes", async function () {
      const { registry, stranger } = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      await expect(registry.connect(stranger).register("", 1n, fx.DeviceKind.CPU, "cpu", 1))
        .to.be.revertedWithCustomError(registry, "ProviderRegistryInvalidName")
        .withArgs(0, 64);
      // 22 three-byte characters are 66 bytes though only 22 characters: the limit is on bytes.
      await expect(registry.connect(stranger).register("€".repeat(22), 1n, fx.DeviceKind.CPU, "cpu", 1))
        .to.be.revertedWithCustomError(registry, "ProviderRegistryInvalidName")
        .withArgs(66, 64);
    });

    it("register: reverts with ProviderRegistryZeroPrice / ZeroMemory when the offer is zero", async function () {
      const { registry, stranger } = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      await expect(registry.connect(stranger).register("n", 0n, fx.DeviceKind.CPU, "cpu", 1))
        .to.be.revertedWithCustomError(registry, "ProviderRegistryZeroPrice")
        .withArgs(stranger.address);
      await expect(registry.connect(stranger).register("n", 1n, fx.DeviceKind.CPU, "cpu", 0))
        .to.be.revertedWithCustomError(registry, "ProviderRegistryZeroMemory")
        .withArgs(stranger.address);
    });
  });

  describe("update", function () {
    it("update: changes the offer, keeps name and registration time, and emits ProviderUpdated", async function () {
      const { registry, provider1 } = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      const before = await registry.providerOf(provider1.address);
      await expect(registry.connect(provider1).update(1_234n, fx.DeviceKind.CPU, "capped H200", 8_192))
        .to.emit(registry, "ProviderUpdated")
        .withArgs(provider1.address, 1_234n, fx.DeviceKind.CPU, "capped H200", 8_192);
      const after = await registry.providerOf(provider1.address);
      expect(after.name).to.equal(before.name);
      expect(after.registeredAt).to.equal(before.registeredAt);
      expect(await registry.quote(provider1.address)).to.deep.equal([1_234n, 8_192n, true]);
      expect(after.deviceModel).to.equal("capped H200");
      expect(after.kind).to.equal(BigInt(fx.DeviceKind.CPU));
    });

    it("update: reverts with ProviderRegistryNotRegistered when the caller never registered", async function () {
      const { registry, stranger } = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      await expect(registry.connect(stranger).update(1n, fx.DeviceKind.CPU, "cpu", 1))
        .to.be.revertedWithCustomError(registry, "ProviderRegistryNotRegistered")
        .withArgs(stranger.address);
    });

    it("update: reverts with ProviderRegistryZeroPrice / ZeroMemory when the new offer is zero", async function () {
      const { registry, provider1 } = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      await expect(registry.connect(provider1).update(0n, fx.DeviceKind.CPU, "cpu", 1))
        .to.be.revertedWithCustomError(registry, "ProviderRegistryZeroPrice")
        .withArgs(provider1.address);
      await expect(registry.connect(provider1).update(1n, fx.DeviceKind.CPU, "cpu", 0))
        .to.be.revertedWithCustomError(registry, "ProviderRegistryZeroMemory")
        .withArgs(provider1.address);
      expect((await registry.quote(provider1.address))[0]).to.equal(fx.PRICE.provider1);
    });
  });

  describe("deactivate / reactivate", function () {
    it("deactivate: marks the provider inactive and emits ProviderDeactivated; reactivate undoes it", async function () {
      const { registry, provider2 } = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      await expect(registry.connect(provider2).deactivate())
        .to.emit(registry, "ProviderDeactivated")
        .withArgs(provider2.address);
      expect(await registry.isActive(provider2.address)).to.equal(false);
      expect((await registry.quote(provider2.address))[2]).to.equal(false);
      await expect(registry.connect(provider2).reactivate())
        .to.emit(registry, "ProviderReactivated")
        .withArgs(provider2.address);
      expect(await registry.isActive(provider2.address)).to.equal(true);
    });

    it("deactivate / reactivate: revert with ProviderRegistryActiveUnchanged when already in that state", async function () {
      const { registry, provider2 } = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      await expect(registry.connect(provider2).reactivate())
        .to.be.revertedWithCustomError(registry, "ProviderRegistryActiveUnchanged")
        .withArgs(provider2.address, true);
      await registry.connect(provider2).deactivate();
      await expect(registry.connect(provider2).deactivate())
        .to.be.revertedWithCustomError(registry, "ProviderRegistryActiveUnchanged")
        .withArgs(provider2.address, false);
    });

    it("deactivate / reactivate: revert with ProviderRegistryNotRegistered for an unknown caller", async function () {
      const { registry, stranger } = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      await expect(registry.connect(stranger).deactivate())
        .to.be.revertedWithCustomError(registry, "ProviderRegistryNotRegistered")
        .withArgs(stranger.address);
      await expect(registry.connect(stranger).reactivate())
        .to.be.revertedWithCustomError(registry, "ProviderRegistryNotRegistered")
        .withArgs(stranger.address);
    });

    it("views: an unknown address reads as an empty, inactive record", async function () {
      const { registry, stranger } = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      const record = await registry.providerOf(stranger.address);
      expect(record.registeredAt).to.equal(0n);
      expect(await registry.isActive(stranger.address)).to.equal(false);
      expect(await registry.quote(stranger.address)).to.deep.equal([0n, 0n, false]);
    });
  });
});
