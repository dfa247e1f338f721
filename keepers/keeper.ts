/**
 * What a keeper is, for the registry (keepers/registry.ts) that `gpuchain keeper NAME` and `keeper all` are built
 * from: its flags, how a validated config is built from them, and how it is prepared and run. A new keeper is one
 * folder (config.ts, decide.ts, tick.ts, keeper.ts) plus one line in the registry; see keepers/README.md.
 */
import type { ParseArgsConfig } from "node:util";
import type { Deployment } from "../sdk/node/deployment.ts";
import { runLoop, type Schedule, type TickResult } from "../sdk/run/runner.ts";
import type { KeeperContext } from "./chain.ts";
import type { FlagValues, SharedConfig } from "./config.ts";

export type KeeperOptions = NonNullable<ParseArgsConfig["options"]>;

/** What a keeper may need beyond its context while it is prepared. */
export interface KeeperEnv {
  deployment: Deployment;
  rpc: string;
}

export interface KeeperDefinition<C extends SharedConfig = SharedConfig> {
  name: string;
  /** One line for `gpuchain keeper --help`. */
  summary: string;
  /** Its own flags, as help lines (the shared ones are listed once). */
  help: string[];
  /** Its own flags. A `port` flag becomes `--NAME-port` under `keeper all` (each server needs its own). */
  options: KeeperOptions;
  /** Whether it sends transactions (so needs `--key`, unless `--dry-run`). */
  sends: boolean;
  /** Flags → a validated config, before anything connects; `portFlag` is "port" or "NAME-port". */
  config(values: FlagValues, portFlag: string): C;
  /** Connects what it needs (checks, servers' dependencies) and returns its run: resolves with an exit code. */
  prepare(ctx: KeeperContext, config: C, env: KeeperEnv): Promise<(signal: AbortSignal) => Promise<number>>;
}

/** Keeps the config type of each definition while the registry holds them side by side. */
export function defineKeeper<C extends SharedConfig>(k: KeeperDefinition<C>): KeeperDefinition<SharedConfig> {
  return k as unknown as KeeperDefinition<SharedConfig>;
}

/** Runs a keeper's tick on the shared runner with its schedule and `--once`, logging to its context's logger. */
export function runTicks(
  name: string,
  ctx: KeeperContext,
  config: Pick<SharedConfig, "once"> & Schedule,
  tick: () => Promise<TickResult | void>,
  signal: AbortSignal,
): Promise<number> {
  const schedule: Schedule = config.cron !== undefined ? { cron: config.cron } : { intervalMs: config.intervalMs };
  return runLoop({ name, tick, ...schedule, once: config.once, signal, logger: ctx.logger });
}
