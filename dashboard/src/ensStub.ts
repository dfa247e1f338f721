/**
 * Stands in for @adraffy/ens-normalize in the browser bundle (dashboard/vite.config.ts alias): the dashboard reads
 * and names accounts by address only, never by ENS name, and ethers' normaliser with its Unicode tables is about
 * 30 kB of the gzipped bundle. A name reaching it is an error, said plainly.
 */
export function ens_normalize(name: string): string {
  throw new Error(`the dashboard does not resolve ENS names (got "${name}"): use a 0x address`);
}
