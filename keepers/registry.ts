/**
 * Every keeper, once: `gpuchain keeper NAME` and `keeper all` (keepers/cli.ts) are built from this list.
 * Adding a keeper is one folder (see keepers/README.md) and one line here.
 */
import { collector } from "./collector/keeper.ts";
import { coordinator } from "./coordinator/keeper.ts";
import { finalizer } from "./finalizer/keeper.ts";
import type { KeeperDefinition } from "./keeper.ts";
import { reserves } from "./reserves/keeper.ts";

export const KEEPERS: readonly KeeperDefinition[] = [coordinator, collector, finalizer, reserves];
