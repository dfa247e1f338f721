/**
 * The keepers a network runs, by the names their log lines carry (`component`) and `gpuchain keeper NAME` takes:
 * what a status view lists even before (or after) it hears from one. keepers/registry.ts defines them; a test
 * (test/dashboard/units.ts) holds the two lists equal. Pure and browser-safe.
 */
export const KEEPER_NAMES = ["coordinator", "collector", "finalizer", "reserves"] as const;

export type KeeperName = (typeof KEEPER_NAMES)[number];
