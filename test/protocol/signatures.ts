/**
 * Verifier decisions reach the escrow two ways: 2-of-3 Safe-owner signatures over the escrow's EIP-712 digest
 * (relayed by anyone), or a Safe transaction calling the escrow directly. Plain ECDSA owner signatures are checked
 * by the escrow itself with the Safe's own rule (owners and threshold read from the Safe on each call); every other
 * signature kind is checked by the Safe through EIP-1271.
 */
import { expect } from "chai";
import SafeKit from "@safe-global/protocol-kit";
import { HDNodeWallet, Mnemonic } from "ethers";
import * as fx from "../helpers/fixture.ts";
import {
  checkpointDecisionDigest,
  checkpointDecisionTypes,
  escrowDomain,
  faultRefusalDigest,
  safeMessage,
  signAsSafeOwner,
  faultRefusalTypes,
  verdictDigest,
  verdictTypes,
} from "../../sdk/rules/verifierSignatures.ts";

// At run time (ESM) the default import is the Safe class; TypeScript reads the package's types as CommonJS and
// sees the module object, whose `default` is the class (same shim as keepers/collector/safeTx.ts).
type SafeClass = (typeof import("@safe-global/protocol-kit"))["default"];
const Safe = ("init" in SafeKit
  ? SafeKit
  : (SafeKit as unknown as { default: SafeClass }).default) as unknown as SafeClass;

/** Hardhat's default accounts come from the well-known test mnemonic. */
const MNEMONIC = Mnemonic.fromPhrase("test test test test test test test test test test test junk");
const privateKeyOf = (index: number) => HDNodeWallet.fromMnemonic(MNEMONIC, `m/44'/60'/0'/0/${index}`).privateKey;

/** Signatures over a digest built in another domain (another chain or another escrow). */
async function signInDomain(p: fx.Protocol, chainId: bigint, escrow: string, jobId: bigint, hash: string) {
  const digest = checkpointDecisionDigest(escrowDomain(chainId, escrow), {
    jobId,
    epoch: 1n,
    step: 10,
    checkpointHash: hash,
    accept: true,
  });
  return fx.signDigest(p, digest, [p.verifier1, p.verifier2]);
}

async function kits(p: fx.Protocol) {
  const contractNetworks = { [p.chainId.toString()]: p.singletons };
  // Safe owners are Hardhat accounts 3, 4, 5 (verifier1..3).
  const init = (i: number) =>
    Safe.init({
      provider: fx.connection.provider as never,
      signer: privateKeyOf(i),
      safeAddress: p.safeAddress,
      contractNetworks,
    });
  return [await init(3), await init(5)];
}

/** A 2-of-3 Safe transaction (verifier1 + verifier3) calling `to` (default: the escrow) with `data`. */
async function execute(p: fx.Protocol, data: string, to = p.escrowAddress) {
  const [kitA, kitB] = await kits(p);
  let tx = await kitA.createTransaction({ transactions: [{ to, value: "0", data }] });
  tx = await kitA.signTransaction(tx);
  tx = await kitB.signTransaction(tx);
  const { hash } = await kitB.executeTransaction(tx);
  return hash;
}

/** The SafeMessage hash the Safe's owners sign for an escrow digest. */
function safeMessageHash(p: fx.Protocol, digest: string): string {
  const m = safeMessage(p.chainId, p.safeAddress, digest);
  return fx.ethers.TypedDataEncoder.hash(m.domain, m.types, m.value);
}

/** Safe-packed signatures in the order given (not sorted). */
const packInOrder = (...sigs: string[]) => "0x" + sigs.map((s) => s.slice(2)).join("");

/** `owner`'s pre-approved-hash signature (Safe v = 1): r is the owner, s unused. */
const approvedHashSignature = (owner: string) => fx.ethers.zeroPadValue(owner, 32) + "00".repeat(32) + "01";

describe("JobEscrow: verifier signatures", function () {
  describe("typed data twins", function () {
    it("digests: the TypeScript checkpoint and verdict digests equal the contract's", async function () {
      const p = await fx.networkHelpers.loadFixture(fx.deployProtocol);
      const domain = escrowDomain(p.chainId, p.escrowAddress);
      const h = fx.ethers.id("blob");
      for (const accept of [true, false]) {
        expect(
          checkpointDecisionDigest(domain, { jobId: 7n, epoch: 3n, step: 42, checkpointHash: h, accept }),
        ).to.equal(await p.escrow.checkpointDecisionDigest(7n, 3n, 42, h, accept));
      }
      expect(verdictDigest(domain, { jobId: 7n, modelHash: h, metric: fx.METRIC, passed: true })).to.equal(
        await p.escrow.verdictDigest(7n, h, fx.METRIC, true),
      );
      const fault = {
        step: 41,
        inputHash: fx.ethers.id("in"),
        committedHash: fx.ethers.id("out"),
        replayedHash: fx.ethers.id("re"),
        finder: p.verifier2.address,
      };
      expect(faultRefusalDigest(domain, { jobId: 7n, epoch: 3n, step: 42, checkpointHash: h, fault })).to.equal(
        await p.escrow.faultRefusalDigest(7n, 3n, 42, h, fault),
      );
      const encoder = (types: Record<string, { name: string; type: string }[]>) =>
        fx.ethers.TypedDataEncoder.from(types);
      expect(fx.ethers.id(encoder(checkpointDecisionTypes).encodeType("CheckpointDecision"))).to.equal(
        await p.escrow.CHECKPOINT_DECISION_TYPEHASH(),
      );
      expect(fx.ethers.id(encoder(faultRefusalTypes).encodeType("FaultRefusal"))).to.equal(
        await p.escrow.FAULT_REFUSAL_TYPEHASH(),
      );
      expect(fx.ethers.id(encoder(verdictTypes).encodeType("Verdict"))).to.equal(await p.escrow.VERDICT_TYPEHASH());
    });
  });

  describe("relayed 2-of-3 owner signatures", function () {
    for (const [a, b] of [
      [0, 1],
      [0, 2],
      [1, 2],
      [2, 0],
    ] as const) {
      it(`acceptCheckpoint: accepts verifier${a + 1} + verifier${b + 1} signatures relayed by a stranger`, async function () {
        const p = await fx.pendingCheckpoint();
        const sigs = await fx.signDecision(p, p.jobId, 1n, 10, p.hash, true, [p.verifiers[a], p.verifiers[b]]);
        await expect(p.escrow.connect(p.stranger).acceptCheckpoint(p.jobId, 1n, 10, p.hash, sigs)).to.emit(
          p.escrow,
          "CheckpointAccepted",
        );
      });
    }

    it("acceptCheckpoint: accepts all three owners' signatures", async function () {
      const p = await fx.pendingCheckpoint();
      const sigs = await fx.signDecision(p, p.jobId, 1n, 10, p.hash, true, p.verifiers);
      await expect(p.escrow.acceptCheckpoint(p.jobId, 1n, 10, p.hash, sigs)).to.emit(p.escrow, "CheckpointAccepted");
    });

    it("refuseCheckpoint: accepts 2-of-3 refuse signatures", async function () {
      const p = await fx.pendingCheckpoint();
      const sigs = await fx.signDecision(p, p.jobId, 1n, 10, p.hash, false, [p.verifier2, p.verifier3]);
      await expect(p.escrow.refuseCheckpoint(p.jobId, 1n, 10, p.hash, sigs)).to.emit(p.escrow, "CheckpointRefused");
    });
  });

  describe("rejected signature sets", function () {
    it("replay: the same accept signatures used twice revert with JobEscrowNoSuchPendingCheckpoint", async function () {
      const p = await fx.pendingCheckpoint();
      const sigs = await fx.signDecision(p, p.jobId, 1n, 10, p.hash, true);
      await p.escrow.acceptCheckpoint(p.jobId, 1n, 10, p.hash, sigs);
      await expect(p.escrow.acceptCheckpoint(p.jobId, 1n, 10, p.hash, sigs))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowNoSuchPendingCheckpoint")
        .withArgs(p.jobId, 1n, 10, p.hash);
    });

    it("replay: signatures for one checkpoint do not accept a later checkpoint", async function () {
      const p = await fx.pendingCheckpoint();
      const sigs = await fx.signDecision(p, p.jobId, 1n, 10, p.hash, true);
      await p.escrow.acceptCheckpoint(p.jobId, 1n, 10, p.hash, sigs);
      const h20 = fx.ckpt(p.jobId, 20);
      await p.escrow.connect(p.provider1).reportCheckpoint(p.jobId, 1n, 20, h20);
      await expect(p.escrow.acceptCheckpoint(p.jobId, 1n, 20, h20, sigs))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowInvalidVerifierSignatures")
        .withArgs(await p.escrow.checkpointDecisionDigest(p.jobId, 1n, 20, h20, true));
    });

    it("replay: a checkpoint re-reported in a later epoch (after its first report lapsed) needs new signatures", async function () {
      const p = await fx.pendingCheckpoint();
      const sigs = await fx.signDecision(p, p.jobId, 1n, 10, p.hash, true);
      await p.escrow.connect(p.coordinator).unassign(p.jobId);
      await fx.networkHelpers.time.increase(fx.DECISION_TIMEOUT + 1n);
      await p.escrow.connect(p.coordinator).assign(p.jobId, p.provider1.address); // epoch 3
      await p.escrow.connect(p.provider1).reportCheckpoint(p.jobId, 3n, 10, p.hash);
      await expect(p.escrow.acceptCheckpoint(p.jobId, 3n, 10, p.hash, sigs))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowInvalidVerifierSignatures")
        .withArgs(await p.escrow.checkpointDecisionDigest(p.jobId, 3n, 10, p.hash, true));
    });

    const invalid: { name: string; sign: (p: Awaited<ReturnType<typeof fx.pendingCheckpoint>>) => Promise<string> }[] =
      [
        {
          name: "only 1 of the 3 owners signed",
          sign: (p) => fx.signDecision(p, p.jobId, 1n, 10, p.hash, true, [p.verifier2]),
        },
        {
          name: "an owner and a non-owner signed",
          sign: (p) => fx.signDecision(p, p.jobId, 1n, 10, p.hash, true, [p.verifier1, p.stranger]),
        },
        {
          name: "two non-owners signed",
          sign: (p) => fx.signDecision(p, p.jobId, 1n, 10, p.hash, true, [p.client, p.stranger]),
        },
        {
          name: "the same owner signed twice",
          sign: (p) => fx.signDecision(p, p.jobId, 1n, 10, p.hash, true, [p.verifier3, p.verifier3]),
        },
        {
          name: "they were signed for another job",
          sign: (p) => fx.signDecision(p, p.jobId + 1n, 1n, 10, p.hash, true),
        },
        { name: "they were signed for another step", sign: (p) => fx.signDecision(p, p.jobId, 1n, 9, p.hash, true) },
        { name: "they were signed for another epoch", sign: (p) => fx.signDecision(p, p.jobId, 2n, 10, p.hash, true) },
        {
          name: "they were signed for another hash",
          sign: (p) => fx.signDecision(p, p.jobId, 1n, 10, fx.ckpt(p.jobId, 10, "forged"), true),
        },
        { name: "they were signed as a refusal", sign: (p) => fx.signDecision(p, p.jobId, 1n, 10, p.hash, false) },
        {
          name: "the digest was built with another chain id",
          sign: (p) => signInDomain(p, 84532n, p.escrowAddress, p.jobId, p.hash),
        },
        {
          name: "the digest was built for another escrow address",
          sign: (p) => signInDomain(p, p.chainId, p.stranger.address, p.jobId, p.hash),
        },
        { name: "no signatures are given", sign: async () => "0x" },
        { name: "the signatures are garbage bytes", sign: async () => "0x" + "ab".repeat(130) },
      ];
    for (const c of invalid) {
      it(`acceptCheckpoint: reverts with JobEscrowInvalidVerifierSignatures when ${c.name}`, async function () {
        const p = await fx.pendingCheckpoint();
        const sigs = await c.sign(p);
        await expect(p.escrow.connect(p.stranger).acceptCheckpoint(p.jobId, 1n, 10, p.hash, sigs))
          .to.be.revertedWithCustomError(p.escrow, "JobEscrowInvalidVerifierSignatures")
          .withArgs(await p.escrow.checkpointDecisionDigest(p.jobId, 1n, 10, p.hash, true));
        expect((await p.escrow.jobOf(p.jobId)).pendingStep).to.equal(10n);
      });
    }

    it("refuseCheckpoint: reverts with JobEscrowInvalidVerifierSignatures when given accept signatures", async function () {
      const p = await fx.pendingCheckpoint();
      const sigs = await fx.signDecision(p, p.jobId, 1n, 10, p.hash, true);
      await expect(p.escrow.refuseCheckpoint(p.jobId, 1n, 10, p.hash, sigs))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowInvalidVerifierSignatures")
        .withArgs(await p.escrow.checkpointDecisionDigest(p.jobId, 1n, 10, p.hash, false));
    });

    it("signatures: an owner's signature for a different Safe does not count", async function () {
      const p = await fx.pendingCheckpoint();
      const digest = await p.escrow.checkpointDecisionDigest(p.jobId, 1n, 10, p.hash, true);
      const otherSafe = { ...p, safeAddress: p.stranger.address };
      const sigs = await fx.signDigest(otherSafe, digest, [p.verifier1, p.verifier2]);
      await expect(p.escrow.acceptCheckpoint(p.jobId, 1n, 10, p.hash, sigs))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowInvalidVerifierSignatures")
        .withArgs(digest);
    });
  });

  describe("plain owner signatures checked by the escrow with the Safe's rule; the rest by the Safe", function () {
    const decision = (p: fx.Protocol & { jobId: bigint; hash: string }) =>
      p.escrow.checkpointDecisionDigest(p.jobId, 1n, 10, p.hash, true);
    const ownerSig = async (p: fx.Protocol, who: (typeof p.verifiers)[number], digest: string) =>
      signAsSafeOwner(who, p.chainId, p.safeAddress, digest);
    /** verifier1..3 sorted by address, as the Safe wants them. */
    const byAddress = (p: fx.Protocol) =>
      [...p.verifiers].sort((a, b) => (BigInt(a.address) < BigInt(b.address) ? -1 : 1));

    it("acceptCheckpoint: owners' signatures in descending order revert (the Safe's rule: ascending)", async function () {
      const p = await fx.pendingCheckpoint();
      const digest = await decision(p);
      const [low, high] = byAddress(p);
      const sigs = packInOrder(await ownerSig(p, high, digest), await ownerSig(p, low, digest));
      await expect(p.escrow.acceptCheckpoint(p.jobId, 1n, 10, p.hash, sigs))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowInvalidVerifierSignatures")
        .withArgs(digest);
      const sorted = packInOrder(await ownerSig(p, low, digest), await ownerSig(p, high, digest));
      await expect(p.escrow.acceptCheckpoint(p.jobId, 1n, 10, p.hash, sorted)).to.emit(p.escrow, "CheckpointAccepted");
    });

    it("acceptCheckpoint: an owner swapped out through the Safe stops counting at once; its replacement counts", async function () {
      const p = await fx.pendingCheckpoint();
      const [kit] = await kits(p);
      const swap = await kit.createSwapOwnerTx({
        oldOwnerAddress: p.verifier2.address,
        newOwnerAddress: p.stranger.address,
      });
      await execute(p, swap.data.data, p.safeAddress);
      const old = await fx.signDecision(p, p.jobId, 1n, 10, p.hash, true, [p.verifier1, p.verifier2]);
      await expect(p.escrow.acceptCheckpoint(p.jobId, 1n, 10, p.hash, old))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowInvalidVerifierSignatures")
        .withArgs(await decision(p));
      const renewed = await fx.signDecision(p, p.jobId, 1n, 10, p.hash, true, [p.verifier1, p.stranger]);
      await expect(p.escrow.acceptCheckpoint(p.jobId, 1n, 10, p.hash, renewed)).to.emit(p.escrow, "CheckpointAccepted");
    });

    it("acceptCheckpoint: threshold raised to 3 through the Safe: two owners revert, three accept", async function () {
      const p = await fx.pendingCheckpoint();
      const [kit] = await kits(p);
      const raise = await kit.createChangeThresholdTx(3);
      await execute(p, raise.data.data, p.safeAddress);
      const two = await fx.signDecision(p, p.jobId, 1n, 10, p.hash, true, [p.verifier1, p.verifier2]);
      await expect(p.escrow.acceptCheckpoint(p.jobId, 1n, 10, p.hash, two))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowInvalidVerifierSignatures")
        .withArgs(await decision(p));
      const three = await fx.signDecision(p, p.jobId, 1n, 10, p.hash, true, p.verifiers);
      await expect(p.escrow.acceptCheckpoint(p.jobId, 1n, 10, p.hash, three)).to.emit(p.escrow, "CheckpointAccepted");
    });

    it("acceptCheckpoint: a pre-approved hash (v = 1) + one ECDSA signature: the Safe's EIP-1271 check decides", async function () {
      const p = await fx.pendingCheckpoint();
      const digest = await decision(p);
      const [low, high] = byAddress(p);
      const sigs = packInOrder(approvedHashSignature(low.address), await ownerSig(p, high, digest));
      await expect(p.escrow.acceptCheckpoint(p.jobId, 1n, 10, p.hash, sigs))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowInvalidVerifierSignatures")
        .withArgs(digest);
      await p.safe.connect(low).getFunction("approveHash")(safeMessageHash(p, digest));
      await expect(p.escrow.acceptCheckpoint(p.jobId, 1n, 10, p.hash, sigs)).to.emit(p.escrow, "CheckpointAccepted");
    });

    it("acceptCheckpoint: eth_sign signatures (v + 4): the Safe's EIP-1271 check decides, and accepts", async function () {
      const p = await fx.pendingCheckpoint();
      const digest = await decision(p);
      const ethSign = async (who: (typeof p.verifiers)[number]) => {
        const sig = fx.ethers.Signature.from(await who.signMessage(fx.ethers.getBytes(safeMessageHash(p, digest))));
        return fx.ethers.concat([sig.r, sig.s, fx.ethers.toBeHex(sig.v + 4, 1)]);
      };
      const [low, high] = byAddress(p);
      const sigs = packInOrder(await ethSign(low), await ethSign(high));
      await expect(p.escrow.acceptCheckpoint(p.jobId, 1n, 10, p.hash, sigs)).to.emit(p.escrow, "CheckpointAccepted");
    });

    it("acceptCheckpoint: Safe without fallback handler: plain owner signatures accept, an approved hash does not", async function () {
      const p = await fx.pendingCheckpoint();
      const data = p.safe.interface.encodeFunctionData("setFallbackHandler", [fx.ethers.ZeroAddress]);
      await execute(p, data, p.safeAddress);
      const digest = await decision(p);
      const [low, high] = byAddress(p);
      await p.safe.connect(low).getFunction("approveHash")(safeMessageHash(p, digest));
      const viaSafe = packInOrder(approvedHashSignature(low.address), await ownerSig(p, high, digest));
      await expect(p.escrow.acceptCheckpoint(p.jobId, 1n, 10, p.hash, viaSafe))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowInvalidVerifierSignatures")
        .withArgs(digest);
      const plain = await fx.signDecision(p, p.jobId, 1n, 10, p.hash, true);
      await expect(p.escrow.acceptCheckpoint(p.jobId, 1n, 10, p.hash, plain)).to.emit(p.escrow, "CheckpointAccepted");
    });
  });

  describe("a Safe transaction calling the escrow directly (protocol-kit)", function () {
    it("acceptCheckpoint: a 2-of-3 Safe transaction with empty signatures accepts the checkpoint", async function () {
      const p = await fx.pendingCheckpoint();
      const data = p.escrow.interface.encodeFunctionData("acceptCheckpoint", [p.jobId, 1n, 10, p.hash, "0x"]);
      const hash = await execute(p, data);
      await expect(hash)
        .to.emit(p.escrow, "CheckpointAccepted")
        .withArgs(p.jobId, p.provider1.address, 1n, 10, p.hash, 10, 9_000n);
      await expect(hash).to.emit(p.safe, "ExecutionSuccess");
    });

    it("refuseCheckpoint and submitVerdict: also work as Safe transactions", async function () {
      const p = await fx.pendingCheckpoint();
      await execute(p, p.escrow.interface.encodeFunctionData("refuseCheckpoint", [p.jobId, 1n, 10, p.hash, "0x"]));
      expect(await p.escrow.isFenced(p.jobId, p.provider1.address)).to.equal(true);
      const modelHash = await fx.trainToEnd(p, p.jobId, p.provider2);
      await execute(
        p,
        p.escrow.interface.encodeFunctionData("submitVerdict", [p.jobId, modelHash, fx.METRIC, true, "0x"]),
      );
      expect((await p.escrow.verdictOf(p.jobId)).modelHash).to.equal(modelHash);
    });

    it("acceptCheckpoint: empty signatures from anyone but the Safe revert with JobEscrowInvalidVerifierSignatures", async function () {
      const p = await fx.pendingCheckpoint();
      await expect(p.escrow.connect(p.verifier1).acceptCheckpoint(p.jobId, 1n, 10, p.hash, "0x"))
        .to.be.revertedWithCustomError(p.escrow, "JobEscrowInvalidVerifierSignatures")
        .withArgs(await p.escrow.checkpointDecisionDigest(p.jobId, 1n, 10, p.hash, true));
    });

    it("acceptCheckpoint: a later Safe transaction for a decided checkpoint fails inside the Safe and changes nothing", async function () {
      const p = await fx.pendingCheckpoint();
      const data = p.escrow.interface.encodeFunctionData("acceptCheckpoint", [p.jobId, 1n, 10, p.hash, "0x"]);
      await execute(p, data);
      const paid = (await p.escrow.jobOf(p.jobId)).paid;
      // Safe v1.4.1 with safeTxGas = 0 reverts the whole transaction when the inner call fails (GS013).
      const failed = await execute(p, data).then(
        () => false,
        () => true,
      );
      expect(failed, "the second Safe transaction must fail").to.equal(true);
      expect((await p.escrow.jobOf(p.jobId)).paid).to.equal(paid);
      await fx.reportAndAccept(p, p.jobId, p.provider1, 20);
    });
  });
});
