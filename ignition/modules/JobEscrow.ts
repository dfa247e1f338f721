import type { buildModule } from "@nomicfoundation/hardhat-ignition/modules";
import ProviderRegistryModule from "./ProviderRegistry.ts";
import VerifierSafeModule from "./VerifierSafe.ts";

/** The builder `buildModule` hands its callback (Ignition no longer exports the type by name from here). */
type IgnitionModuleBuilder = Parameters<Parameters<typeof buildModule>[1]>[0];
type TokenFuture = Parameters<IgnitionModuleBuilder["contractAt"]>[2];

/**
 * The escrow part, shared by the local and the Base Sepolia protocol modules (they differ only in where the
 * token comes from). Parameters: `owner`, `coordinator`, `arbiter`, `feeRecipient` (addresses),
 * `leaseDurationSeconds`, `disputeBond` (token units, 6 decimals).
 */
export function addJobEscrow(m: IgnitionModuleBuilder, token: TokenFuture) {
  const { registry } = m.useModule(ProviderRegistryModule);
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
  return { escrow, registry, ...safe };
}
