// The tests' seeded PRNG is the one the fault proxy uses (sdk/run/random.ts).
export { mulberry32 } from "../../sdk/run/random.ts";
