// The dashboard's words for how a provider's device is chosen (Provide compute, Help) follow the agent's own rule
// (agent/executionProvider.ts): WebGPU, else CUDA, else the CPU. A new-user walkthrough found the pages saying "the
// first NVIDIA GPU nvidia-smi reports, else the CPU", which is neither the order nor the providers the agent uses.
import { expect } from "chai";
import { DEVICE_CHOICE, DEVICE_ORDER, GPU_NOT_PROVEN } from "../../dashboard/src/model/deviceChoice.ts";
import { chooseExecutionProvider, type DeviceFacts } from "../../agent/executionProvider.ts";

const H200 = { name: "NVIDIA H200", vendor: "nvidia" as const, memoryMiB: 143771, source: "nvidia-smi" as const };
const NVIDIA_ICD = {
  file: "/usr/share/vulkan/icd.d/nvidia_icd.json",
  library: "libGLX_nvidia.so.0",
  kind: "nvidia" as const,
};
const everything: DeviceFacts = { gpus: [H200], vulkanLoader: true, drivers: [NVIDIA_ICD], cudaBinaries: true };

describe("dashboard: the words for a provider's device choice", function () {
  it("the agent's own rule, taking away one thing at a time, chooses in DEVICE_ORDER", function () {
    const chosen = [
      chooseExecutionProvider(everything).provider,
      chooseExecutionProvider({ ...everything, vulkanLoader: false }).provider,
      chooseExecutionProvider({ ...everything, vulkanLoader: false, cudaBinaries: false }).provider,
    ];
    expect(chosen).to.deep.equal([...DEVICE_ORDER]);
  });

  it("names WebGPU, CUDA and the CPU in that order, and the flag that forces one", function () {
    const at = ["WebGPU", "CUDA", "CPU"].map((w) => DEVICE_CHOICE.indexOf(w));
    expect(
      at.every((i) => i >= 0),
      DEVICE_CHOICE,
    ).to.equal(true);
    expect([...at].sort((a, b) => a - b)).to.deep.equal(at);
    expect(DEVICE_CHOICE).to.contain("--device cpu, webgpu or cuda");
    expect(DEVICE_CHOICE).to.not.match(/first NVIDIA GPU/i);
  });

  it("says what a GPU provider meets today: no proven GPU profile, --device cpu takes work", function () {
    expect(GPU_NOT_PROVEN).to.contain("--device cpu");
  });
});
