declare module "virtual:gpuchain-abis" {
  const abis: { escrow: unknown[]; registry: unknown[]; usdc: unknown[] };
  export default abis;
}
