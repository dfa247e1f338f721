/** The verifier Safe's owners read from the chain, named as people see them ("verifier N", sdk/words/narrative.ts). */
import { Contract, type ContractRunner } from "ethers";
import { verifierNames } from "../words/narrative.ts";

/** The two Safe views the off-chain parts read (SafeL2 v1.4.1): the collector and the finder's name. */
export const SAFE_ABI = [
  "function getOwners() view returns (address[])",
  "function getThreshold() view returns (uint256)",
];

/** lowercase address → "verifier N", in the Safe's owner order (who found a slashed fault, say). */
export async function verifierNamesOn(runner: ContractRunner, safe: string): Promise<Record<string, string>> {
  return verifierNames((await new Contract(safe, SAFE_ABI, runner).getOwners()) as string[]);
}
