/**
 * The protocol deployed on a simulated chain through the same Ignition module as the local chain (test USDC,
 * registry, a real Safe v1.4.1 as 2-of-3 verifier multisig, escrow): the one deployment step every TypeScript test
 * fixture builds on (test/helpers/fixture.ts, the agent's and the verifier's). No side effects on import.
 */
import type { network } from "hardhat";
import GPUChainLocal from "../../ignition/modules/GPUChainLocal.ts";
import type { Deployment } from "../../sdk/node/deployment.ts";

type Connection = Awaited<ReturnType<typeof network.create>>;

export async function deployOn(connection: Connection) {
  const { ethers, ignition } = connection;
  const d = await ignition.deploy(GPUChainLocal);
  const escrow = await ethers.getContractAt("JobEscrow", await d.escrow.getAddress());
  const usdc = await ethers.getContractAt("TestUSDC", await d.usdc.getAddress());
  const registry = await ethers.getContractAt("ProviderRegistry", await d.registry.getAddress());
  const { chainId } = await ethers.provider.getNetwork();
  const deployment: Deployment = {
    escrow: await escrow.getAddress(),
    registry: await registry.getAddress(),
    usdc: await usdc.getAddress(),
    verifierSafe: await d.verifierSafe.getAddress(),
    multicall3: await d.multicall3.getAddress(),
    safe: {
      safeSingletonAddress: await d.safeSingleton.getAddress(),
      safeProxyFactoryAddress: await d.proxyFactory.getAddress(),
      fallbackHandlerAddress: await d.fallbackHandler.getAddress(),
      multiSendAddress: await d.multiSend.getAddress(),
      multiSendCallOnlyAddress: await d.multiSendCallOnly.getAddress(),
      signMessageLibAddress: await d.signMessageLib.getAddress(),
      createCallAddress: await d.createCall.getAddress(),
      simulateTxAccessorAddress: await d.simulateTxAccessor.getAddress(),
    },
  };
  return { escrow, usdc, registry, safe: d.verifierSafe, deployment, chainId };
}
