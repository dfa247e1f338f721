import { expect } from "chai";
import * as fx from "../helpers/fixture.ts";

describe("JobEscrow: admin and deployment", function () {
  it("deployment: Ignition wires token, registry, Safe, roles, lease, bond and constants", async function () {
    const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
    const { escrow } = p;
    expect(await escrow.token()).to.equal(await p.usdc.getAddress());
    expect(await escrow.registry()).to.equal(await p.registry.getAddress());
    expect(await escrow.verifierSafe()).to.equal(p.safeAddress);
    expect(await escrow.owner()).to.equal(p.owner.address);
    expect([await escrow.coordinator(), await escrow.arbiter(), await escrow.feeRecipient()]).to.deep.equal([
      p.coordinator.address,
      p.arbiter.address,
      p.feeRecipient.address,
    ]);
    expect([await escrow.leaseDuration(), await escrow.disputeBond()]).to.deep.equal([fx.LEASE, fx.BOND]);
    expect(await escrow.ARBITER_TIMEOUT()).to.equal(fx.ARBITER_TIMEOUT);
    expect([await escrow.MIN_DISPUTE_WINDOW(), await escrow.MAX_DISPUTE_WINDOW()]).to.deep.equal([60n, 30n * 86_400n]);
    expect(await p.safe.getOwners()).to.deep.equal(p.verifiers.map((v) => v.address));
    expect(await p.safe.getThreshold()).to.equal(2n);
  });

  describe("constructor", function () {
    it("constructor: reverts with JobEscrowZeroAddress for a zero token, registry or role", async function () {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      const token = await p.usdc.getAddress();
      const registry = await p.registry.getAddress();
      const Z = fx.ethers.ZeroAddress;
      const bad: [string, string, Record<string, string>][] = [
        [Z, registry, {}],
        [token, Z, {}],
        [token, registry, { coordinator: Z }],
        [token, registry, { arbiter: Z }],
        [token, registry, { feeRecipient: Z }],
        [token, registry, { verifierSafe: Z }],
      ];
      for (const [t, r, o] of bad) {
        await expect(
          fx.ethers.deployContract("JobEscrow", [t, r, fx.escrowRoles(p, o), fx.LEASE, fx.BOND]),
        ).to.be.revertedWithCustomError(p.escrow, "JobEscrowZeroAddress");
      }
    });

    it("constructor: reverts with JobEscrowZeroAmount for a zero lease or bond, OwnableInvalidOwner for a zero owner", async function () {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      const args = [await p.usdc.getAddress(), await p.registry.getAddress()];
      await expect(
        fx.ethers.deployContract("JobEscrow", [...args, fx.escrowRoles(p), 0n, fx.BOND]),
      ).to.be.revertedWithCustomError(p.escrow, "JobEscrowZeroAmount");
      await expect(
        fx.ethers.deployContract("JobEscrow", [...args, fx.escrowRoles(p), fx.LEASE, 0n]),
      ).to.be.revertedWithCustomError(p.escrow, "JobEscrowZeroAmount");
      await expect(
        fx.ethers.deployContract("JobEscrow", [
          ...args,
          fx.escrowRoles(p, { owner: fx.ethers.ZeroAddress }),
          fx.LEASE,
          fx.BOND,
        ]),
      )
        .to.be.revertedWithCustomError(p.escrow, "OwnableInvalidOwner")
        .withArgs(fx.ethers.ZeroAddress);
    });

    it("constructor: emits CoordinatorSet, ArbiterSet and FeeRecipientSet so the roles can be rebuilt from events", async function () {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      const args = [await p.usdc.getAddress(), await p.registry.getAddress(), fx.escrowRoles(p), fx.LEASE, fx.BOND];
      const escrow = await fx.ethers.deployContract("JobEscrow", args);
      const tx = escrow.deploymentTransaction()!;
      await expect(tx).to.emit(escrow, "CoordinatorSet").withArgs(p.coordinator.address);
      await expect(tx).to.emit(escrow, "ArbiterSet").withArgs(p.arbiter.address);
      await expect(tx).to.emit(escrow, "FeeRecipientSet").withArgs(p.feeRecipient.address);
    });
  });

  describe("templates", function () {
    it("setTemplateApproval: approves and unapproves; an unapproved template blocks new jobs but not running ones", async function () {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      const jobId = await fx.startJob(p);
      await expect(p.escrow.connect(p.owner).setTemplateApproval(fx.TEMPLATE, false))
        .to.emit(p.escrow, "TemplateApprovalSet")
        .withArgs(fx.TEMPLATE, false);
      expect(await p.escrow.isApprovedTemplate(fx.TEMPLATE)).to.equal(false);
      await expect(p.escrow.connect(p.client).createJob(fx.DEFAULT_REQUEST))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowTemplateNotApproved")
        .withArgs(fx.TEMPLATE);
      await expect(p.escrow.connect(p.provider1).heartbeat(jobId, 1n)).to.emit(p.escrow, "LeaseExtended");
      const other = fx.ethers.id("another template");
      await expect(p.escrow.connect(p.owner).setTemplateApproval(other, true))
        .to.emit(p.escrow, "TemplateApprovalSet")
        .withArgs(other, true);
      await fx.createJob(p, { templateId: other });
    });

    it("setTemplateApproval: reverts with JobEscrowZeroTemplate for the zero template id", async function () {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      await expect(
        p.escrow.connect(p.owner).setTemplateApproval(fx.ethers.ZeroHash, true),
      ).to.be.revertedWithCustomError(p.escrow, "JobEscrowZeroTemplate");
    });
  });

  describe("roles", function () {
    it("setCoordinator: the new coordinator may assign; the old one may not", async function () {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      await expect(p.escrow.connect(p.owner).setCoordinator(p.stranger.address))
        .to.emit(p.escrow, "CoordinatorSet")
        .withArgs(p.stranger.address);
      const jobId = await fx.createJob(p);
      await expect(p.escrow.connect(p.coordinator).assign(jobId, p.provider1.address))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowNotCoordinator")
        .withArgs(p.coordinator.address, p.stranger.address);
      await p.escrow.connect(p.stranger).assign(jobId, p.provider1.address);
    });

    it("setArbiter / setFeeRecipient: update the role and emit ArbiterSet / FeeRecipientSet", async function () {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      await expect(p.escrow.connect(p.owner).setArbiter(p.stranger.address))
        .to.emit(p.escrow, "ArbiterSet")
        .withArgs(p.stranger.address);
      await expect(p.escrow.connect(p.owner).setFeeRecipient(p.stranger.address))
        .to.emit(p.escrow, "FeeRecipientSet")
        .withArgs(p.stranger.address);
      expect([await p.escrow.arbiter(), await p.escrow.feeRecipient()]).to.deep.equal([
        p.stranger.address,
        p.stranger.address,
      ]);
    });

    it("setCoordinator / setArbiter / setFeeRecipient: revert with JobEscrowZeroAddress for the zero address", async function () {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      const e = p.escrow.connect(p.owner);
      for (const call of [e.setCoordinator, e.setArbiter, e.setFeeRecipient]) {
        await expect(call(fx.ethers.ZeroAddress)).to.be.revertedWithCustomError(p.escrow, "JobEscrowZeroAddress");
      }
    });

    it("admin functions: revert with OwnableUnauthorizedAccount for anyone but the owner", async function () {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      const e = p.escrow.connect(p.coordinator);
      const calls = [
        () => e.setTemplateApproval(fx.TEMPLATE, false),
        () => e.setCoordinator(p.stranger.address),
        () => e.setArbiter(p.stranger.address),
        () => e.setFeeRecipient(p.stranger.address),
        () => e.transferOwnership(p.stranger.address),
        () => e.renounceOwnership(),
      ];
      for (const call of calls) {
        await expect(call())
          .to.be.revertedWithCustomError(p.escrow, "OwnableUnauthorizedAccount")
          .withArgs(p.coordinator.address);
      }
    });

    it("ownership: moves in two steps; only the pending owner may accept", async function () {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      await expect(p.escrow.connect(p.owner).transferOwnership(p.stranger.address))
        .to.emit(p.escrow, "OwnershipTransferStarted")
        .withArgs(p.owner.address, p.stranger.address);
      expect(await p.escrow.owner()).to.equal(p.owner.address);
      await expect(p.escrow.connect(p.client).acceptOwnership())
        .to.be.revertedWithCustomError(p.escrow, "OwnableUnauthorizedAccount")
        .withArgs(p.client.address);
      await expect(p.escrow.connect(p.stranger).acceptOwnership())
        .to.emit(p.escrow, "OwnershipTransferred")
        .withArgs(p.owner.address, p.stranger.address);
      await expect(p.escrow.connect(p.owner).setArbiter(p.owner.address))
        .to.be.revertedWithCustomError(p.escrow, "OwnableUnauthorizedAccount")
        .withArgs(p.owner.address);
    });
  });

  describe("token that returns false", function () {
    it("createJob: reverts with SafeERC20FailedOperation when the token's transferFrom returns false", async function () {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      const bad = await fx.ethers.deployContract("FalseReturningToken");
      const badAddress = await bad.getAddress();
      const registry = await fx.ethers.deployContract("ProviderRegistry", [badAddress, 1n, 7_200n]);
      const escrow = await fx.ethers.deployContract("JobEscrow", [
        badAddress,
        await registry.getAddress(),
        fx.escrowRoles(p),
        fx.LEASE,
        fx.BOND,
      ]);
      await escrow.connect(p.owner).setTemplateApproval(fx.TEMPLATE, true);
      await bad.mint(p.client.address, 1_000_000n);
      await bad.connect(p.client).approve(await escrow.getAddress(), 1_000_000n);
      await expect(escrow.connect(p.client).createJob(fx.DEFAULT_REQUEST))
        .to.be.revertedWithCustomError(escrow, "SafeERC20FailedOperation")
        .withArgs(badAddress);
      expect(await escrow.jobCount()).to.equal(0n);
      expect(await escrow.reserves()).to.deep.equal([0n, 0n]);
    });
  });
});
