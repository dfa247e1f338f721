/**
 * How a provider's agent chooses what it trains on, in the dashboard's words (Provide compute, Help): the agent's
 * own rule (agent/executionProvider.ts chooseExecutionProvider, README "Which device a provider trains on"), in its
 * order — WebGPU, else CUDA, else the CPU — with `--device` forcing one. test/dashboard/deviceChoice.ts holds the
 * words to the rule's order. Text only: the page imports nothing of the agent.
 */

/** The execution providers `--device auto` tries, first to last. */
export const DEVICE_ORDER = ["webgpu", "cuda", "cpu"] as const;

/** What the provider command does to choose its device (completes "It creates a provider key, …"). */
export const DEVICE_CHOICE =
  "chooses what to train on as the agent does: onnxruntime's WebGPU on a GPU (seen by nvidia-smi, or as a " +
  "/dev/dri render node of an AMD, Intel or NVIDIA card) when the Vulkan loader and that vendor's Vulkan driver " +
  "are installed; else CUDA on an NVIDIA GPU when onnxruntime-node's CUDA binaries were installed; else the CPU " +
  "(--device cpu, webgpu or cuda forces one; the agent's first lines say which and why)";

/** What a GPU provider meets today (README): no GPU arithmetic profile is proven, so it is assigned no job. */
export const GPU_NOT_PROVEN =
  "No GPU arithmetic profile is proven yet: a provider training on WebGPU or CUDA is assigned no job of a " +
  "proven template, so on a GPU machine add --device cpu to take work today.";
