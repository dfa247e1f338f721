/**
 * How a failed command reads: one line naming what was wrong (the value given, what would be right), no stack
 * unless --debug. Exit 2 for a usage error, 1 for anything else.
 */
import { CommandError, UsageError } from "../sdk/run/args.ts";
import { protocolErrors, RpcError } from "../sdk/node/contracts.ts";
import { DeploymentError } from "../sdk/node/deployment.ts";
import { explainError } from "../sdk/node/errors.ts";
import { KeyFileError } from "../sdk/run/keys.ts";
import { emitJson, inJsonMode } from "./json.ts";

/** Errors whose message is already the whole story for a person. */
const EXPECTED = [CommandError, RpcError, DeploymentError, KeyFileError];

/**
 * Under --json (cli/json.ts) the same line is also standard output's one document:
 * `{ "error": { "message": "…", "kind": "usage" | "failure", "exitCode": 2 | 1 } }`.
 */
export function reportError(err: unknown, usage: string, debug: boolean): number {
  if (err instanceof UsageError) {
    console.error(`gpuchain: ${firstLine(err.message)}${err.showUsage ? `\n\n${usage}` : ""}`);
    if (debug) console.error(err.stack);
    return jsonError(firstLine(err.message), "usage", 2);
  }
  const expected = EXPECTED.some((kind) => err instanceof kind) || (err as { name?: string })?.name === "WorkloadError";
  const line = oneLine(err);
  console.error(`gpuchain: ${line}${expected || debug ? "" : "  (--debug shows the stack)"}`);
  if (debug) console.error((err as Error)?.stack ?? String(err));
  return jsonError(line, "failure", 1);
}

function jsonError(message: string, kind: "usage" | "failure", exitCode: number): number {
  if (inJsonMode()) emitJson({ error: { message, kind, exitCode } });
  return exitCode;
}

function oneLine(err: unknown): string {
  const e = err as { code?: string; message?: string };
  if (e?.code === "TIMEOUT")
    return "the RPC did not answer in time (a slow or overloaded node; --rpc-timeout-ms raises the limit)";
  if (/ECONNREFUSED/.test(String(e?.message)))
    return "lost the connection to the RPC (connection refused): is the node still running?";
  try {
    return firstLine(explainError(err, protocolErrors()));
  } catch {
    return firstLine(String(e?.message ?? err));
  }
}

function firstLine(text: string): string {
  return text.split("\n")[0];
}
