/**
 * The floors (docs/ARCHITECTURE.md, "Floors"): imports point down only, and nothing imports in a circle.
 *   top:    cli/ demo/ scripts/ bench/
 *   middle: keepers/ agent/ verifier/ dashboard/
 *   bottom: workloads/ sdk/   (and the contracts' generated types/ and build artifacts/)
 *           sdk/ in four rooms: rules/ and words/ (pure) below node/ and run/ (I/O)
 * test/ may import anything. `npm run deps` checks it (CI runs it through `npm run check`).
 */
const TOP = "^(cli|demo|scripts|bench)/";
const MIDDLE = "^(keepers|agent|verifier|dashboard)/";
const BOTTOM = "^(workloads|sdk)/";

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "Import circles make load order matter and hide which part owns what.",
      from: {},
      to: { circular: true },
    },
    {
      name: "middle-imports-no-top",
      severity: "error",
      comment: "keepers/, agent/, verifier/ and dashboard/ are below the commands: share through sdk/ instead.",
      from: { path: MIDDLE },
      to: { path: TOP },
    },
    {
      name: "middle-parts-independent",
      severity: "error",
      comment: "The long-running parts do not import one another: what two of them share lives in sdk/ or workloads/.",
      from: { path: "^(keepers|agent|verifier|dashboard)/" },
      to: { path: MIDDLE, pathNot: "^$1/" },
    },
    {
      name: "bottom-imports-only-bottom",
      severity: "error",
      comment: "workloads/ and sdk/ are the floor everything stands on: they import nothing above them.",
      from: { path: BOTTOM },
      to: { path: [TOP, MIDDLE] },
    },
    {
      name: "sdk-pure-imports-no-chain",
      severity: "error",
      comment:
        "sdk/rules/ (pure mirrors of the contracts) and sdk/words/ (what people read) are pure: they import nothing " +
        "that talks to a node (sdk/node/) or runs a process (sdk/run/), and no Node built-in, so the dashboard, " +
        "the keepers and the tests can call them anywhere.",
      from: { path: "^sdk/(rules|words)/" },
      to: { path: "^sdk/(node|run)/" },
    },
    {
      name: "sdk-pure-imports-no-node-builtins",
      severity: "error",
      comment: "sdk/rules/ and sdk/words/ run in the browser too: no file system, network or process modules.",
      from: { path: "^sdk/(rules|words)/" },
      to: { dependencyTypes: ["core"] },
    },
    {
      name: "only-tests-import-tests",
      severity: "error",
      comment: "Production code never depends on test code (bench/ measures with the tests' fixtures).",
      from: { pathNot: "^(test|bench)/" },
      to: { path: "^test/" },
    },
    {
      name: "no-links-outside-the-repository",
      severity: "error",
      comment: "Every import resolves inside this repository or to an npm package.",
      from: {},
      to: { path: "^\\.\\./", pathNot: "node_modules" },
    },
    {
      name: "not-to-unresolvable",
      severity: "error",
      comment: "An import that does not resolve fails at run time.",
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: ["node_modules", "^types/", "^artifacts/"] },
    exclude: {
      path: [
        "^node_modules/",
        "^types/",
        "^artifacts/",
        "^cache/",
        "^dashboard/dist/",
        "^coverage/",
        "^ignition/deployments/",
      ],
    },
    // Type-only imports count: a circle of types is still a circle in the design.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      extensions: [".ts", ".tsx", ".js", ".cjs", ".mjs", ".json"],
      // Packages like hardhat publish only an "exports" map (ESM): resolve through it as Node does.
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "types", "default"],
      mainFields: ["module", "main", "types"],
    },
  },
};
