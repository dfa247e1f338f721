// Every model family a template may name. Adding a family: one folder beside mlp/ and one line here
// (steps in workloads/README.md, "Adding a model family").
import type { ModelFamily, TemplateDescriptor } from "../types.ts";
import { cnn } from "./cnn/index.ts";
import { mlp } from "./mlp/index.ts";
import { transformer } from "./transformer/index.ts";

const FAMILIES: Readonly<Record<string, ModelFamily>> = { mlp, cnn, transformer };

/** The family a descriptor names; throws naming the known ones. */
export function familyOf(d: TemplateDescriptor): ModelFamily {
  const f = Object.hasOwn(FAMILIES, d.family) ? FAMILIES[d.family] : undefined;
  if (!f)
    throw new Error(`unknown model family ${JSON.stringify(d.family)} (known: ${Object.keys(FAMILIES).join(", ")})`);
  return f;
}
