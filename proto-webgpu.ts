import { createTrainer, loadTemplate, stateHash } from "./workloads/index.ts";
const seed = "0x" + "11".repeat(32);
for (const name of process.argv.slice(2)) {
  try {
    const tr = await createTrainer(loadTemplate(name), { executionProvider: "webgpu" });
    let s = tr.initialState(seed);
    const out: string[] = [];
    for (let i = 1; i <= 20; i++) { s = (await tr.trainStep(s, seed, i)).state; if (i % 5 === 0) out.push(stateHash(s)); }
    console.log(JSON.stringify({ [name]: out }));
    await tr.close();
  } catch (e) { console.log(name, "failed:", String((e as Error).message).slice(0, 300)); }
}
