/**
 * The dashboard's build: Vite + React. The contract ABIs come from Hardhat's artifacts/ at build time as the
 * virtual module `virtual:gpuchain-abis` (nothing generated is committed).
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import react from "@vitejs/plugin-react";
import { defineConfig, type Plugin } from "vite";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "..");

const ARTIFACTS = {
  escrow: "artifacts/contracts/JobEscrow.sol/JobEscrow.json",
  registry: "artifacts/contracts/ProviderRegistry.sol/ProviderRegistry.json",
  usdc: "artifacts/contracts/test/TestUSDC.sol/TestUSDC.json",
};

function abiModule(): Plugin {
  const id = "virtual:gpuchain-abis";
  return {
    name: "gpuchain-abis",
    resolveId: (source) => (source === id ? "\0" + id : undefined),
    load(loaded) {
      if (loaded !== "\0" + id) return undefined;
      const abis = Object.fromEntries(
        Object.entries(ARTIFACTS).map(([k, file]) => {
          const full = path.join(root, file);
          this.addWatchFile(full);
          try {
            return [k, JSON.parse(readFileSync(full, "utf8")).abi];
          } catch {
            throw new Error(`${file} is missing: run \`npx hardhat build\` first`);
          }
        }),
      );
      return `export default ${JSON.stringify(abis)};`;
    },
  };
}

export default defineConfig({
  root: here,
  base: "./",
  plugins: [react(), abiModule()],
  build: { outDir: path.join(here, "dist"), emptyOutDir: true, chunkSizeWarningLimit: 1024 },
  logLevel: "warn",
});
