/**
 * The dashboard's build: Vite + React. The escrow's ABI is imported from Hardhat's artifacts/ at build time
 * (`npx hardhat build` writes them; nothing generated is committed).
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

const here = path.dirname(fileURLToPath(import.meta.url));

export default defineConfig({
  root: here,
  base: "./",
  plugins: [react()],
  // ENS is never used by the page: ethers' normaliser and its tables stay out of the bundle (src/ensStub.ts)
  resolve: { alias: { "@adraffy/ens-normalize": path.join(here, "src", "ensStub.ts") } },
  json: { namedExports: true, stringify: false },
  build: { outDir: path.join(here, "dist"), emptyOutDir: true, chunkSizeWarningLimit: 1024 },
  logLevel: "warn",
});
