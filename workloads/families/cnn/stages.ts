// The shapes of a CNN template's convolution stages (each 3×3, padding 1, then a 2×2 max-pool).
import type { TemplateDescriptor } from "../../types.ts";

/** One convolution stage: its input's height, width and channels, and its output channels. */
export type ConvStage = { H: number; W: number; Cin: number; Cout: number };

export function convStages(d: TemplateDescriptor): ConvStage[] {
  const [h0, w0, c0] = d.conv!.image;
  const out: ConvStage[] = [];
  let [H, W, Cin] = [h0, w0, c0];
  for (const Cout of d.conv!.channels) {
    out.push({ H, W, Cin, Cout });
    [H, W, Cin] = [H / 2, W / 2, Cout];
  }
  return out;
}
