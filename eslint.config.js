// ESLint flat config: the recommended JavaScript and typescript-eslint rules over every TypeScript file we write.
// Syntax-only rules (no type information), so `npm run lint` stays within seconds on a small machine;
// `npm run typecheck` does the type-aware part.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  {
    ignores: [
      "node_modules/",
      "artifacts/",
      "cache/",
      "types/",
      "typechain-types/",
      "coverage/",
      "dist/",
      "dashboard/dist/",
      "test-results/",
      "playwright-report/",
      ".gpuchain/",
      "ignition/deployments/",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      ecmaVersion: 2023,
      sourceType: "module",
      globals: {
        // Node 22 globals the code uses (no `globals` package installed).
        process: "readonly",
        console: "readonly",
        Buffer: "readonly",
        URL: "readonly",
        AbortController: "readonly",
        AbortSignal: "readonly",
        setTimeout: "readonly",
        clearTimeout: "readonly",
        setInterval: "readonly",
        clearInterval: "readonly",
        setImmediate: "readonly",
        structuredClone: "readonly",
        fetch: "readonly",
        performance: "readonly",
        TextEncoder: "readonly",
        TextDecoder: "readonly",
      },
    },
    rules: {
      // `_name` marks a deliberately unused binding (e.g. a property taken out by destructuring).
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none", ignoreRestSiblings: true },
      ],
    },
  },
  {
    files: ["**/*.cjs"],
    languageOptions: { sourceType: "commonjs", globals: { module: "writable", require: "readonly" } },
  },
  {
    // mocha's `function () {}` callbacks use `this` (this.timeout); chai's `expect(x).to.be.true` is an expression.
    files: ["test/**/*.ts"],
    rules: {
      "@typescript-eslint/no-unused-expressions": "off",
    },
  },
);
