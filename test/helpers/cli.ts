/**
 * What the CLI tests against a real node share: the real `gpuchain` as a child process (stdout and stderr apart,
 * read to the end), and verifier Safe owners' signatures packed as the escrow takes them.
 */
import { spawn } from "node:child_process";
import path from "node:path";
import { Wallet } from "ethers";
import { packSafeSignatures, signAsSafeOwner } from "../../sdk/rules/verifierSignatures.ts";

const CLI = path.resolve("cli/gpuchain.ts");

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `gpuchain ARGS` on this Node (`env` added to this process's); resolves on "close", when both pipes are drained.
 * `onStdout` sees the standard output so far at each chunk (a test acting on what the command says while it runs).
 */
export function runGpuchain(
  args: string[],
  env: Record<string, string> = {},
  onStdout?: (soFar: string) => void,
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, ...env },
    });
    let [stdout, stderr] = ["", ""];
    child.stdout.on("data", (d) => {
      stdout += d;
      onStdout?.(stdout);
    });
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

/** The Safe owners' (`keys`, in order) signatures over `digest`, packed for the escrow. */
export async function safeSignatures(
  chainId: bigint,
  safe: string,
  digest: string,
  keys: (string | Wallet)[],
): Promise<string> {
  const parts = [];
  for (const k of keys) {
    const w = typeof k === "string" ? new Wallet(k) : k;
    parts.push({ signer: w.address, signature: await signAsSafeOwner(w, chainId, safe, digest) });
  }
  return packSafeSignatures(parts);
}
