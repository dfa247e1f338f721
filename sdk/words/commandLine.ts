/**
 * How a person runs `gpuchain` from any folder: `npx --prefix INSTALL gpuchain …` finds this repository's own bin
 * (package.json "bin") wherever the shell stands, where a bare `npx gpuchain` works only inside the repository
 * (elsewhere npx would look the name up in the registry). Pure: the dashboard's Provide page and the provider agent
 * write their commands with it.
 */

/** A word as a POSIX shell reads it back: unchanged when it is plain, else in single quotes. */
export function shellWord(word: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** `npx --prefix INSTALL gpuchain`, or `npx gpuchain` when the install folder is not known. */
export function gpuchainCommand(install: string | undefined): string {
  return install ? `npx --prefix ${shellWord(install)} gpuchain` : "npx gpuchain";
}

/** The command that claims `key`'s earnings and withdraws what the escrow owes it. */
export function withdrawCommand(o: { install?: string; key: string; rpc: string; deployment: string }): string {
  return [
    gpuchainCommand(o.install),
    "withdraw",
    `--key ${shellWord(o.key)}`,
    `--rpc ${shellWord(o.rpc)}`,
    `--deployment ${shellWord(o.deployment)}`,
  ].join(" ");
}
