/**
 * EIP-2612 permits, the one definition in this repository: the typed data a token holder signs so that the escrow
 * may pull `value` in the same transaction that creates the job (`createJobWithPermit`).
 */
import { Signature, type Signer, type TypedDataDomain } from "ethers";
import { typesFromSignature } from "./verifierSignatures.ts";

export const PERMIT_TYPES = typesFromSignature(
  "Permit(address owner,address spender,uint256 value,uint256 nonce,uint256 deadline)",
);

/** The token views a permit needs (TestUSDC, or any OpenZeppelin ERC20Permit). */
export interface PermitToken {
  name(): Promise<string>;
  nonces(owner: string): Promise<bigint>;
  getAddress(): Promise<string>;
}

export interface SignedPermit {
  deadline: bigint;
  v: number;
  r: string;
  s: string;
}

/** The token's EIP-712 domain as OpenZeppelin's ERC20Permit builds it (its name, version "1"). */
export async function permitDomain(token: PermitToken, chainId: bigint): Promise<TypedDataDomain> {
  return { name: await token.name(), version: "1", chainId, verifyingContract: await token.getAddress() };
}

/** `owner`'s permit for `spender` to pull `value` of `token` until `deadline` (unix seconds), at its next nonce. */
export async function signPermit(
  owner: Signer,
  token: PermitToken,
  p: { spender: string; value: bigint; deadline: bigint; chainId: bigint },
): Promise<SignedPermit> {
  const address = await owner.getAddress();
  const [domain, nonce] = await Promise.all([permitDomain(token, p.chainId), token.nonces(address)]);
  const message = { owner: address, spender: p.spender, value: p.value, nonce, deadline: p.deadline };
  const sig = Signature.from(await owner.signTypedData(domain, PERMIT_TYPES, message));
  return { deadline: p.deadline, v: sig.v, r: sig.r, s: sig.s };
}
