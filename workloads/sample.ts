// Text sampled greedily from a language template's state: what a person reads instead of a loss figure. Every
// symbol comes from the template's portable sample graph, so the same state gives the same text everywhere.
import { createSession, f32, type Feeds } from "./runtime.ts";
import { decodeSymbols, encodeText } from "./text.ts";
import type { Template, TrainingState } from "./types.ts";

/** The fixed prompt of every sample: the novel's first words. */
export const SAMPLE_PROMPT = "Call me Ishmael. ";

export type Sampler = { sample(state: TrainingState, symbols?: number): Promise<string>; close(): Promise<void> };

/** A sampler for a template whose family can sample (the transformer); undefined for classifiers. */
export async function createSampler(t: Template): Promise<Sampler | undefined> {
  const bytes = t.family.sampleGraph?.(t.descriptor);
  if (!bytes) return undefined;
  const session = await createSession(bytes, "cpu");
  const T = t.descriptor.data.kind === "text" ? t.descriptor.data.context : 0;
  return {
    async sample(state, symbols = 64) {
      const text = Array.from(encodeText(SAMPLE_PROMPT));
      const weights: Feeds = {};
      for (const w of state.weights) weights[w.name] = f32(w.data, w.dims);
      for (let n = 0; n < symbols; n++) {
        const window = text.slice(-T);
        const ids = new Float32Array(T);
        ids.set(window);
        const out = await session.run({
          ...weights,
          ids: f32(ids, [1, T]),
          at: f32(Float32Array.of(window.length - 1), []),
        });
        text.push((out.next.data as Float32Array)[0]);
      }
      return decodeSymbols(text.slice(SAMPLE_PROMPT.length));
    },
    close: () => session.release(),
  };
}
