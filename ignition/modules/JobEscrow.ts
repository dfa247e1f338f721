import type { buildModule } from "@nomicfoundation/hardhat-ignition/modules";
import VerifierSafeModule from "./VerifierSafe.ts";

/** The builder `buildModule` hands its callback (Ignition no longer exports the type by name from here). */
type IgnitionModuleBuilder = Parameters<Parameters<typeof buildModule>[1]>[0];
type TokenFuture = Parameters<IgnitionModuleBuilder["contractAt"]>[2];

/**
 * The escrow part, shared by the local and the Base Sepolia protocol modules (they differ only in where the
 * token comes from). Parameters: `owner`, `coordinator`, `arbiter`, `feeRecipient` (addresses),
 * `leaseDurationSeconds`, `disputeBond` (token units, 6 decimals), and the registry's stake rules: `minStake`
 * (token units; the smallest lock a job takes) and `unbondingDelaySeconds` (must exceed the escrow's
 * DECISION_TIMEOUT of one hour, or the escrow's constructor reverts). The deployer binds the escrow to the
 * registry, once.
 */
export function addJobEscrow(m: IgnitionModuleBuilder, token: TokenFuture) {
  const minStake = m.getParameter("minStake", 1_000_000n);
  const unbondingDelay = m.getParameter("unbondingDelaySeconds", 2 * 24 * 3600);
  const registry = m.contract("ProviderRegistry", [token, minStake, unbondingDelay]);
  const safe = m.useModule(VerifierSafeModule);
  const roles = {
    owner: m.getParameter("owner", m.getAccount(0) as never),
    coordinator: m.getParameter("coordinator", m.getAccount(1) as never),
    arbiter: m.getParameter("arbiter", m.getAccount(2) as never),
    feeRecipient: m.getParameter("feeRecipient", m.getAccount(6) as never),
    verifierSafe: safe.verifierSafe,
  };
  const leaseDuration = m.getParameter("leaseDurationSeconds", 120);
  const disputeBond = m.getParameter("disputeBond", 50_000_000n);
  const escrow = m.contract("JobEscrow", [token, registry, roles, leaseDuration, disputeBond]);
  m.call(registry, "bindEscrow", [escrow]);
  return { escrow, registry, ...safe };
}
