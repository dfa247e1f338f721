import { createRequire } from "node:module";
import hardhatToolboxMochaEthersPlugin from "@nomicfoundation/hardhat-toolbox-mocha-ethers";
import { configVariable, defineConfig } from "hardhat/config";

const require = createRequire(import.meta.url);

// One pinned compiler, taken from the npm `solc` wasm build so that builds work offline.
const SOLC_VERSION = "0.8.28";

export default defineConfig({
  plugins: [hardhatToolboxMochaEthersPlugin],
  solidity: {
    version: SOLC_VERSION,
    path: require.resolve("solc/soljson.js"),
    settings: { optimizer: { enabled: true, runs: 200 }, evmVersion: "cancun" },
  },
  // The generated contract types are imported for types only (never run by Node's type stripping), and TypeChain
  // writes them with runtime namespaces that `erasableSyntaxOnly` forbids: their own bodies are not type-checked,
  // while every use of them in our code is.
  typechain: { tsNocheck: true },
  test: {
    solidity: {
      fuzz: { runs: Number(process.env.FUZZ_RUNS ?? 256) },
      invariant: {
        runs: Number(process.env.INVARIANT_RUNS ?? 256),
        depth: Number(process.env.INVARIANT_DEPTH ?? 100),
        failOnRevert: false,
      },
    },
    mocha: { timeout: 600_000 },
  },
  networks: {
    hardhatMainnet: { type: "edr-simulated", chainType: "l1" },
    // `npm start` points this at the chain it started (GPUCHAIN_RPC_URL); plain `--network localhost` uses 8545.
    localhost: { type: "http", chainType: "l1", url: process.env.GPUCHAIN_RPC_URL ?? "http://127.0.0.1:8545" },
    baseSepolia: {
      type: "http",
      chainType: "op",
      chainId: 84532,
      url: configVariable("BASE_SEPOLIA_RPC_URL"),
      accounts: [configVariable("BASE_SEPOLIA_PRIVATE_KEY")],
    },
  },
});
