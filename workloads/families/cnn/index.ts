// The CNN family: 3×3 convolutions with ReLU and 2×2 max-pooling, then a dense head (graphs.ts).
import type { ModelFamily, TemplateDescriptor } from "../../types.ts";
import { buildCnnEvalGraph, buildCnnGraphs, cnnParamSpecs, convStages } from "./graphs.ts";
import { blockRoundedFloatProducts, integerProducts } from "./products.ts";

const pixels = (d: TemplateDescriptor) => d.conv!.image.reduce((a, b) => a * b, 1);

function validate(d: TemplateDescriptor): void {
  const c = d.conv;
  if (!c || c.image.length !== 3 || c.channels.length === 0) {
    throw new Error("a cnn template needs conv.image [height, width, channels] and at least one conv channel count");
  }
  if (!d.arithmetic?.limbs) throw new Error("a cnn template needs exact integer products (arithmetic.limbs)");
  let [H, W] = c.image;
  for (const ch of c.channels) {
    if (H % 2 || W % 2) throw new Error(`a ${H}×${W} map cannot be pooled 2×2 before the ${ch}-channel convolution`);
    [H, W] = [H / 2, W / 2];
  }
  const flat = H * W * c.channels[c.channels.length - 1];
  if (d.layers[0] !== flat)
    throw new Error(`the dense head must start at the flattened ${H}×${W} map: ${flat}, got ${d.layers[0]}`);
  if (d.layers.length < 2) throw new Error("the dense head needs at least [inputs, classes]");
}

export const cnn: ModelFamily = {
  kind: "cnn",
  validate,
  params: cnnParamSpecs,
  graphs: (d) => buildCnnGraphs(d, integerProducts(d.arithmetic!.limbs)),
  floatEvalGraph: (d) => buildCnnEvalGraph(d, blockRoundedFloatProducts(d.arithmetic!.limbs)),
  macsPerStep(d) {
    let perSample = 0;
    for (const s of convStages(d)) perSample += s.H * s.W * 9 * s.Cin * s.Cout;
    for (let i = 0; i + 1 < d.layers.length; i++) perSample += d.layers[i] * d.layers[i + 1];
    return 3 * d.globalBatch * perSample;
  },
  // per stage: the im2col copy, and about four maps of its output (pre-activation, activation, their gradients)
  activationFloatsPerSample: (d) =>
    pixels(d) + convStages(d).reduce((n, s) => n + s.H * s.W * (9 * s.Cin + 4 * s.Cout), 0) + 4 * d.layers[0],
  classes: (d) => d.layers[d.layers.length - 1],
};
