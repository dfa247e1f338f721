/** The EIP-712 type definitions (sdk/rules/verifierSignatures.ts, sdk/rules/permit.ts) read the contract's own type strings. */
import { expect } from "chai";
import { id, TypedDataEncoder } from "ethers";
import { PERMIT_TYPES } from "../../sdk/rules/permit.ts";
import {
  checkpointDecisionTypes,
  SAFE_MESSAGE_TYPES,
  typesFromSignature,
  verdictTypes,
} from "../../sdk/rules/verifierSignatures.ts";
import { deployProtocol, networkHelpers } from "../helpers/fixture.ts";

const encodeType = (types: Record<string, { name: string; type: string }[]>) =>
  TypedDataEncoder.from(types).encodeType(Object.keys(types)[0]);

describe("sdk: EIP-712 type definitions", function () {
  it("each definition encodes back to its type string", function () {
    expect(encodeType(SAFE_MESSAGE_TYPES)).to.equal("SafeMessage(bytes message)");
    expect(encodeType(PERMIT_TYPES)).to.equal(
      "Permit(address owner,address spender,uint256 value,uint256 nonce,uint256 deadline)",
    );
    expect(() => typesFromSignature("not a struct")).to.throw(/not an EIP-712 struct type/);
  });

  it("the escrow's type hashes are the hashes of our type strings", async function () {
    const p = await networkHelpers.loadFixture(deployProtocol);
    expect(await p.escrow.CHECKPOINT_DECISION_TYPEHASH()).to.equal(id(encodeType(checkpointDecisionTypes)));
    expect(await p.escrow.VERDICT_TYPEHASH()).to.equal(id(encodeType(verdictTypes)));
  });
});
