// The tests' seeded PRNG is the one the fault proxy uses (sdk/random.ts).
export { mulberry32 } from "../../sdk/random.ts";
