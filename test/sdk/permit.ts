/** EIP-2612 permits (sdk/rules/permit.ts) against the real test token and escrow. */
import { expect } from "chai";
import { signPermit } from "../../sdk/rules/permit.ts";
import { DEFAULT_REQUEST, deployProtocol, networkHelpers, now } from "../helpers/fixture.ts";

describe("sdk: EIP-2612 permit", function () {
  it("a permit signed with sdk/rules/permit.ts lets the escrow pull the budget in createJobWithPermit", async function () {
    const p = await networkHelpers.loadFixture(deployProtocol);
    await p.usdc.connect(p.client).approve(p.escrowAddress, 0n);
    const deadline = (await now()) + 3_600n;
    const value = DEFAULT_REQUEST.budget;
    const permit = await signPermit(p.client, p.usdc, {
      spender: p.escrowAddress,
      value,
      deadline,
      chainId: p.chainId,
    });
    const before = await p.usdc.balanceOf(p.client.address);
    await p.escrow.connect(p.client).createJobWithPermit(DEFAULT_REQUEST, deadline, permit.v, permit.r, permit.s);
    expect(await p.usdc.balanceOf(p.client.address)).to.equal(before - value);
    expect(await p.usdc.nonces(p.client.address)).to.equal(1n);
  });

  it("the token rejects the permit for another spender or value (the typed data binds both)", async function () {
    const p = await networkHelpers.loadFixture(deployProtocol);
    const deadline = (await now()) + 3_600n;
    const permit = await signPermit(p.client, p.usdc, {
      spender: p.escrowAddress,
      value: 5n,
      deadline,
      chainId: p.chainId,
    });
    const { v, r, s } = permit;
    await expect(
      p.usdc.permit(p.client.address, p.stranger.address, 5n, deadline, v, r, s),
    ).to.be.revertedWithCustomError(p.usdc, "ERC2612InvalidSigner");
    await expect(p.usdc.permit(p.client.address, p.escrowAddress, 6n, deadline, v, r, s)).to.be.revertedWithCustomError(
      p.usdc,
      "ERC2612InvalidSigner",
    );
    await p.usdc.permit(p.client.address, p.escrowAddress, 5n, deadline, v, r, s);
    expect(await p.usdc.allowance(p.client.address, p.escrowAddress)).to.equal(5n);
  });
});
