/**
 * Every command a person types, given bad input, through the real CLI (child processes) against real local chains:
 * each case asserts the one-line message, the exit code (2 usage, 1 failure, 0 for --help and the controls), that
 * no stack trace is printed, and that nothing changed on chain (no block mined on any node) or on disk (every file
 * under the case's folder byte-identical, same mode, none added).
 *
 * Chains: anvil with the protocol deployed through Ignition (the deployment under test); an empty anvil on the
 * same chain id (a restarted chain: the deployment file is stale there); an anvil on another chain id; a TCP
 * server that never answers (a slow RPC); an HTTP server that is no JSON-RPC node; a closed port.
 */
import { expect } from "chai";
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { JsonRpcProvider, Wallet } from "ethers";
import { connectProtocol } from "../../sdk/node/contracts.ts";
import { loadDeployment } from "../../sdk/node/deployment.ts";
import { deployLocal, freePort, startAnvil, TEST_KEYS } from "../../demo/chain.ts";
import { ProcessGroup } from "../../demo/processes.ts";
import { writeKey } from "../../sdk/run/keys.ts";

const NODE = process.execPath;
const CLI = path.resolve("cli/gpuchain.ts");
/** No case needs more than a second of CPU; the margin is for a machine shared with other builds. */
const CASE_LIMIT_MS = 90_000;
const PROBLEM_LINE = /^(gpuchain|npm start|npm start failed|npm run bench|warning): /;

interface Case {
  name: string;
  /** `{rpc}`, `{dep}`, `{stale}`, `{other}`, `{slow}`, `{notrpc}`, `{down}` and `{dir}` are filled in. */
  args: string;
  code: number;
  message: RegExp;
  /** The command's usage follows the one line. */
  usage?: boolean;
  /** Where the output must match: stderr (default) or stdout. */
  stream?: "stdout" | "stderr";
  /** The entry point: `gpuchain` (default), `npm start` (scripts/start.ts) or `npm run bench` (bench/main.ts). */
  entry?: "start" | "bench";
  /** Environment variables set for the command (on top of the test's). */
  env?: Record<string, string>;
}

const ENTRIES = { gpuchain: CLI, start: path.resolve("scripts/start.ts"), bench: path.resolve("bench/main.ts") };

const BAD_CHECKSUM = "0x70997970C51812dc3A010C7d01b50e0d17dc79c8";
const CREATE = "job create --template blobs-tiny --steps 10 --max-price 0.001 --key {dir}/client.key";

/** --help wins over whatever else is given: exit 0 and the usage of `command` on stdout. */
function helpCase(name: string, args: string, command: string): Case {
  return { name, args, code: 0, message: new RegExp(`^usage: ${command}`), stream: "stdout" };
}

const CASES: Case[] = [
  // ---- what was typed (exit 2)
  { name: "no command", args: "", code: 2, message: /^usage: gpuchain <command>/ },
  { name: "unknown command", args: "frobnicate", code: 2, message: /^gpuchain: unknown command "frobnicate"/ },
  {
    name: "unknown flag shows the usage",
    args: "reserves --bogus",
    code: 2,
    message: /^gpuchain: unknown option --bogus$/m,
    usage: true,
  },
  {
    name: "negative price",
    args: `${CREATE} --max-price -1`,
    code: 2,
    message: /^gpuchain: --max-price must be a USDC amount above zero, like 0\.002, got "-1"$/m,
  },
  {
    name: "negative steps",
    args: `${CREATE} --steps -5`,
    code: 2,
    message: /^gpuchain: --steps must be a positive integer, got "-5"$/m,
  },
  {
    name: "fractional steps",
    args: `${CREATE} --steps 2.5`,
    code: 2,
    message: /--steps must be a positive integer, got "2\.5"/,
  },
  {
    name: "steps not a number",
    args: `${CREATE} --steps ten`,
    code: 2,
    message: /--steps must be a positive integer, got "ten"/,
  },
  { name: "zero price", args: `${CREATE} --max-price 0`, code: 2, message: /--max-price must be above zero, got "0"/ },
  {
    name: "price finer than USDC",
    args: `${CREATE} --max-price 0.0000001`,
    code: 2,
    message: /--max-price has more than 6 decimals .*"0\.0000001"/,
  },
  {
    name: "price in exponent form",
    args: `${CREATE} --max-price 1e-3`,
    code: 2,
    message: /--max-price must be a USDC amount .*got "1e-3"/,
  },
  {
    name: "negative budget",
    args: `${CREATE} --budget -3`,
    code: 2,
    message: /--budget must be a USDC amount above zero, like 0\.002, got "-3"/,
  },
  {
    name: "interval above steps",
    args: `${CREATE} --interval 20`,
    code: 2,
    message: /--interval \(20\) cannot exceed --steps \(10\)/,
  },
  {
    name: "unknown template name",
    args: `${CREATE} --template mnist-rnn`,
    code: 2,
    message: /unknown template "mnist-rnn": known templates are mnist-mlp, mnist-cnn, char-transformer, blobs-tiny/,
  },
  {
    name: "malformed template id",
    args: `${CREATE} --template 0x1234`,
    code: 2,
    message: /--template "0x1234" is not a template id \(0x followed by 64 hex digits\)/,
  },
  {
    name: "unknown template id",
    args: `${CREATE} --template 0x${"ab".repeat(32)}`,
    code: 2,
    message: /unknown template id "0xabab/,
  },
  {
    name: "dispute window too short",
    args: `${CREATE} --dispute-window 10s`,
    code: 2,
    message: /--dispute-window must be between 1 min and 30 d, got "10s" \(10 s\)/,
  },
  {
    name: "dispute window too long",
    args: `${CREATE} --dispute-window 31d`,
    code: 2,
    message: /--dispute-window must be between 1 min and 30 d, got "31d" \(31 d\)/,
  },
  {
    name: "malformed duration",
    args: `${CREATE} --dispute-window soon`,
    code: 2,
    message: /--dispute-window must be a duration like 300, 90s, 5m, 2h or 3d, got "soon"/,
  },
  {
    name: "missing template",
    args: "job create --steps 10 --max-price 0.001",
    code: 2,
    message: /^gpuchain: --template is required: one of mnist-mlp, mnist-cnn, char-transformer, blobs-tiny/m,
    usage: true,
  },
  {
    name: "missing max price",
    args: "job create --template blobs-tiny --steps 10",
    code: 2,
    message: /^gpuchain: --max-price is required$/m,
    usage: true,
  },
  {
    name: "job without action",
    args: "job",
    code: 2,
    message: /job needs an action: create, cancel or approve-template \(got none\)/,
    usage: true,
  },
  {
    name: "job with unknown action",
    args: "job frob",
    code: 2,
    message: /job needs an action: .*\(got "frob"\)/,
    usage: true,
  },
  // The id is checked before the deployment (there is none in the case's folder).
  {
    name: "job id not a number, before the deployment",
    args: "job cancel abc --key {dir}/client.key",
    code: 2,
    message: /^gpuchain: a job id must be a positive integer like 3, got "abc"$/m,
  },
  {
    name: "job id zero",
    args: "job cancel 0 --key {dir}/client.key",
    code: 2,
    message: /a job id must be a positive integer like 3, got "0"/,
  },
  {
    name: "job id negative",
    args: "job cancel -3 --key {dir}/client.key",
    code: 2,
    message: /a job id must be a positive integer like 3, got "-3"/,
  },
  {
    name: "job id missing",
    args: "job cancel --key {dir}/client.key",
    code: 2,
    message: /a job id is required/,
    usage: true,
  },
  {
    name: "extra argument",
    args: "job cancel 1 2 --key {dir}/client.key",
    code: 2,
    message: /unexpected argument "2": it takes cancel JOB/,
    usage: true,
  },
  {
    name: "provider name in two words (would register the first only)",
    args: "provide --name my gpu --price 0.001",
    code: 2,
    message: /unexpected argument "gpu": it takes no arguments/,
    usage: true,
  },
  {
    name: "verifier with a stray argument",
    args: "verify extra --key {dir}/owner.key --once --dry-run",
    code: 2,
    message: /unexpected argument "extra": it takes no arguments/,
    usage: true,
  },
  {
    name: "short address",
    args: "wallet 0x1234",
    code: 2,
    message: /ADDRESS must be 0x followed by 40 hex digits, got "0x1234"/,
  },
  {
    name: "address with a bad checksum",
    args: `wallet ${BAD_CHECKSUM}`,
    code: 2,
    message: /ADDRESS "0x70997970C51812dc3A010C7d01b50e0d17dc79c8" has a bad checksum \(EIP-55/,
  },
  { name: "address missing", args: "wallet", code: 2, message: /ADDRESS is required/, usage: true },
  {
    name: "negative from-block",
    args: "explain 1 --from-block -1",
    code: 2,
    message: /--from-block must be a block number \(0 or more\), got "-1"/,
  },
  {
    name: "malformed job list",
    args: "withdraw --jobs 1,,2 --key {dir}/client.key",
    code: 2,
    message: /--jobs must be job ids separated by commas, like 1,2, got "1,,2"/,
  },
  {
    name: "both uphold and reject",
    args: "arbiter resolve 1 --uphold --reject --key {dir}/owner.key",
    code: 2,
    message: /give exactly one of --uphold .* or --reject/,
    usage: true,
  },
  {
    name: "arbiter unknown action",
    args: "arbiter decide 1",
    code: 2,
    message: /arbiter needs the action resolve, got "decide"/,
    usage: true,
  },
  { name: "key required", args: "dispute 1", code: 2, message: /^gpuchain: --key FILE is required/m, usage: true },
  {
    name: "rpc not a URL",
    args: "reserves --rpc ftp://example",
    code: 2,
    message: /--rpc must be an http\(s\) URL like http:\/\/127\.0\.0\.1:8545, got "ftp:\/\/example"/,
  },
  {
    name: "rpc timeout zero",
    args: "reserves --rpc-timeout-ms 0",
    code: 2,
    message: /--rpc-timeout-ms must be a positive integer, got "0"/,
  },
  {
    name: "flag without its value",
    args: "reserves --rpc",
    code: 2,
    message: /^gpuchain: --rpc needs a value$/m,
    usage: true,
  },
  {
    name: "flag followed by a flag",
    args: "reserves --rpc --watch",
    code: 2,
    message: /--rpc needs a value, got the flag --watch/,
    usage: true,
  },
  {
    name: "boolean flag with a value",
    args: "explain 1 --json=yes",
    code: 2,
    message: /^gpuchain: --json takes no value$/m,
    usage: true,
  },
  {
    name: "keeper unknown flag",
    args: "keeper coordinator --bogus",
    code: 2,
    message: /^gpuchain: unknown option --bogus$/m,
    usage: true,
  },
  { name: "unknown keeper", args: "keeper sleeper", code: 2, message: /^gpuchain: unknown keeper "sleeper"/ },
  {
    name: "provider negative price",
    args: "provide --name a --price -1",
    code: 2,
    message: /^gpuchain: --price must be a USDC amount above zero, like 0\.002, got "-1"$/m,
  },
  {
    name: "provider negative memory cap",
    args: "provide --name a --price 0.001 --memory-cap -3",
    code: 2,
    message: /--memory-cap must be a positive integer, got "-3"/,
  },
  {
    name: "provider unknown device",
    args: "provide --name a --price 0.001 --device gpu",
    code: 2,
    message: /^gpuchain: --device must be one of auto, cpu, webgpu, cuda, got "gpu"$/m,
  },
  {
    name: "provider device without a value",
    args: "provide --name a --price 0.001 --device",
    code: 2,
    message: /^gpuchain: --device needs a value/m,
    usage: true,
  },
  {
    name: "provider unknown GPUCHAIN_EP",
    args: "provide --name a --price 0.001",
    env: { GPUCHAIN_EP: "vulkan" },
    code: 2,
    message: /^gpuchain: GPUCHAIN_EP must be one of auto, cpu, webgpu, cuda, got "vulkan"$/m,
  },
  {
    name: "verifier negative samples",
    args: "verify --key {dir}/owner.key --samples -1",
    code: 2,
    message: /--samples must be a non-negative integer, got "-1"/,
  },
  // ---- --help wins, whatever else is given (exit 0)
  helpCase("help with bad flags", "job create --help --bogus --max-price -1", "gpuchain job"),
  helpCase("keeper help", "keeper all -h", "gpuchain keeper"),
  helpCase("provider help", "provide --nonsense --help", "gpuchain provide"),
  helpCase("verifier help", "verify --help", "gpuchain verify"),
  // ---- the world the command meets (exit 1)
  {
    name: "no deployment file",
    args: "reserves --rpc {rpc}",
    code: 1,
    message:
      /^gpuchain: no deployment file at ignition\/deployments\/chain-31337\/deployed_addresses\.json: deploy first/m,
  },
  {
    name: "deployment not JSON",
    args: "reserves --rpc {rpc} --deployment {dir}/notjson.json",
    code: 1,
    message: /^gpuchain: deployment file .*notjson\.json is not JSON/m,
  },
  {
    name: "deployment not an object",
    args: "reserves --rpc {rpc} --deployment {dir}/array.json",
    code: 1,
    message: /array\.json is not Ignition's deployed_addresses\.json/,
  },
  {
    name: "deployment without escrow",
    args: "reserves --rpc {rpc} --deployment {dir}/noescrow.json",
    code: 1,
    message: /noescrow\.json: deployment has no JobEscrow/,
  },
  {
    name: "deployment is a folder",
    args: "reserves --rpc {rpc} --deployment {dir}",
    code: 1,
    message: /is a folder: give its deployed_addresses\.json/,
  },
  {
    name: "key file missing",
    args: "job cancel 1 --rpc {rpc} --deployment {dep} --key {dir}/nobody.key",
    code: 1,
    message: /^gpuchain: no key file at .*nobody\.key/m,
  },
  {
    name: "key file readable by others",
    args: "job cancel 1 --rpc {rpc} --deployment {dep} --key {dir}/open.key",
    code: 1,
    message: /open\.key has permissions 644; it must be readable by its owner only \(chmod 600/,
  },
  {
    name: "key file not a key",
    args: "job cancel 1 --rpc {rpc} --deployment {dep} --key {dir}/garbage.key",
    code: 1,
    message: /garbage\.key does not hold a private key \(expected 0x followed by 64 hex digits\)/,
  },
  {
    name: "key file is a folder",
    args: "job cancel 1 --rpc {rpc} --deployment {dep} --key {dir}/keys",
    code: 1,
    message: /key file .*keys is not a file/,
  },
  {
    name: "settle a job still training",
    args: "settle 1 --rpc {rpc} --deployment {dep} --key {dir}/client.key",
    code: 1,
    message: /^gpuchain: job 1 cannot be settled now: it is Open: a job settles after its verdict and dispute window$/m,
  },
  {
    name: "settle a job that does not exist",
    args: "settle 7 --rpc {rpc} --deployment {dep} --key {dir}/client.key",
    code: 1,
    message: /job 7/,
  },
  {
    name: "settle without a job",
    args: "settle --key {dir}/client.key",
    code: 2,
    message: /^gpuchain: a job id is required/m,
    usage: true,
  },
  {
    name: "provider key readable by others",
    args: "provide --name a --price 0.001 --key {dir}/open.key",
    code: 1,
    message: /^gpuchain: key file .*open\.key has permissions 644/m,
  },
  {
    name: "rpc down",
    args: "reserves --rpc {down} --deployment {dep}",
    code: 1,
    message:
      /^gpuchain: cannot reach the RPC at http:\/\/127\.0\.0\.1:\d+ \(connection refused\): is the node running\?$/m,
  },
  {
    name: "rpc slow",
    args: "reserves --rpc {slow} --deployment {dep} --rpc-timeout-ms 700",
    code: 1,
    message: /^gpuchain: the RPC at .* did not answer within 0\.7 s$/m,
  },
  {
    name: "rpc not a JSON-RPC node",
    args: "reserves --rpc {notrpc} --deployment {dep}",
    code: 1,
    message: /did not answer eth_chainId like an Ethereum JSON-RPC node \(HTTP 404\)/,
  },
  {
    name: "chain id does not match the deployment",
    args: "reserves --rpc {other} --deployment {dep}",
    code: 1,
    message: /was deployed on chain 31337, but the RPC at .* is chain 4242/,
  },
  {
    name: "stale deployment after a chain restart",
    args: "job approve-template blobs-tiny --rpc {stale} --deployment {dep} --key {dir}/owner.key",
    code: 1,
    message:
      /no contract code at the escrow address 0x[0-9a-fA-F]{40} on chain 31337 .* is stale \(was the chain restarted/,
  },
  {
    name: "keeper against a stale deployment",
    args: "keeper reserves --once --rpc {stale} --deployment {dep}",
    code: 1,
    message: /^gpuchain: no contract code at the escrow address/m,
  },
  {
    name: "provider against a stale deployment (not 'could not decode result data' later)",
    args: "provide --name a --price 0.001 --key {dir}/owner.key --rpc {stale} --deployment {dep}",
    code: 1,
    message: /^gpuchain: no contract code at the escrow address .* is stale \(was the chain restarted/m,
  },
  {
    name: "keeper with the RPC down",
    args: "keeper reserves --once --rpc {down} --deployment {dep}",
    code: 1,
    message: /^gpuchain: cannot reach the RPC at/m,
  },
  {
    name: "verifier with the RPC down",
    args: "verify --key {dir}/owner.key --rpc {down} --deployment {dep}",
    code: 1,
    message: /^gpuchain: cannot reach the RPC at/m,
  },
  {
    name: "verifier with a bad store and the RPC down: the store is named, not the RPC",
    args: "verify --key {dir}/owner.key --store bogus://x --rpc {down} --deployment {dep}",
    code: 2,
    message: /^gpuchain: unsupported store URL bogus:\/\/x \(expected file:\/\/DIR or s3:\/\/BUCKET\/PREFIX\)$/m,
  },
  {
    name: "job that does not exist",
    args: "job cancel 99 --rpc {rpc} --deployment {dep} --key {dir}/client.key",
    code: 1,
    message: /^gpuchain: job 99 does not exist: escrow 0x[0-9a-fA-F]{40} has jobs 1 to 1$/m,
  },
  {
    name: "explain a job that does not exist",
    args: "explain 99 --rpc {rpc} --deployment {dep}",
    code: 1,
    message: /^gpuchain: job 99 has no JobCreated event on escrow/m,
  },
  {
    name: "--debug adds the stack",
    args: "reserves --rpc {down} --deployment {dep} --debug",
    code: 1,
    message: /cannot reach the RPC[^]*\n\s+at /m,
  },
  // ---- controls: the same commands with good input succeed and still change nothing
  {
    name: "control: reserves holds",
    args: "reserves --rpc {rpc} --deployment {dep}",
    code: 0,
    message: /proof of reserves: HOLDS/,
    stream: "stdout",
  },
  // ---- npm start and npm run bench follow the same rules
  {
    name: "npm start: unknown flag",
    entry: "start",
    args: "--bogus",
    code: 2,
    message: /^npm start: unknown option --bogus$/m,
    usage: true,
  },
  {
    name: "npm start: an unknown network",
    entry: "start",
    args: "--network mainnet",
    code: 2,
    message: /^npm start: --network must be rehearsal, got "mainnet"$/m,
  },
  {
    name: "npm start: the rehearsal with an external RPC",
    entry: "start",
    args: "--network rehearsal --rpc http://127.0.0.1:8545",
    code: 2,
    message: /^npm start: --network rehearsal runs its own anvil: drop --rpc$/m,
  },
  {
    name: "npm start: negative steps",
    entry: "start",
    args: "--steps -5",
    code: 2,
    message: /^npm start: --steps must be a positive integer, got "-5"$/m,
  },
  {
    name: "npm start: port out of range",
    entry: "start",
    args: "--port 99999",
    code: 2,
    message: /^npm start: --port must be a TCP port \(1 to 65535\), got "99999"$/m,
  },
  {
    name: "npm start: unknown node",
    entry: "start",
    args: "--node geth",
    code: 2,
    message: /^npm start: --node must be hardhat or anvil, got "geth"$/m,
  },
  {
    name: "npm start: unknown template",
    entry: "start",
    args: "--template mnist-rnn",
    code: 2,
    message:
      /^npm start: --template mnist-rnn: not an approved template \(mnist-mlp, mnist-cnn, char-transformer, blobs-tiny\)$/m,
  },
  {
    name: "npm start: --quick with another template",
    entry: "start",
    args: "--quick --template mnist-cnn",
    code: 2,
    message: /^npm start: --quick is the blobs-tiny template; drop it or --template$/m,
  },
  {
    name: "npm start: unknown fault",
    entry: "start",
    args: "--fault explode",
    code: 2,
    message: /^npm start: --fault: unknown fault/m,
  },
  {
    name: "npm start: external run half given",
    entry: "start",
    args: "--rpc {rpc}",
    code: 2,
    message: /needs all three of --rpc URL, --deployment FILE and --keys DIR/,
    usage: true,
  },
  {
    name: "npm start: missing recording",
    entry: "start",
    args: "--replay {dir}/none.jsonl",
    code: 2,
    message: /^npm start: --replay .*none\.jsonl: no such recording$/m,
  },
  { ...helpCase("npm start: help wins", "--bogus --help", "npm start"), entry: "start" },
  {
    name: "npm run bench: unknown flag",
    entry: "bench",
    args: "--fast",
    code: 2,
    message: /^npm run bench: unknown option --fast$/m,
    usage: true,
  },
  {
    name: "npm run bench: stray argument",
    entry: "bench",
    args: "all",
    code: 2,
    message: /^npm run bench: unexpected argument "all"/m,
    usage: true,
  },
  {
    name: "npm run bench: unknown part",
    entry: "bench",
    args: "--part workloads,gpu",
    code: 2,
    message: /^npm run bench: unknown part "gpu" \(parts: workloads, agent, .*, system\)$/m,
  },
  {
    name: "npm run bench: unknown template",
    entry: "bench",
    args: "--part workloads --template gpt2",
    code: 2,
    message: /^npm run bench: unknown template "gpt2" \(templates: mnist-mlp, .*\)$/m,
  },
  { ...helpCase("npm run bench: help", "--help", "npm run bench"), entry: "bench" },
  // ---- jobs nobody can take
  {
    name: "control: explain says why an Open job waits",
    args: "explain 1 --rpc {rpc} --deployment {dep}",
    code: 0,
    message: /^waiting: no active provider fits: no provider is registered and active$/m,
    stream: "stdout",
  },
  {
    name: "control: dry-run job warns that nobody fits",
    args: `${CREATE} --rpc {rpc} --deployment {dep} --dry-run`,
    code: 0,
    message: /^warning: no active provider can take this job: no provider is registered and active$/m,
  },
];

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

function runCli(
  args: string[],
  cwd: string,
  entry: keyof typeof ENTRIES = "gpuchain",
  env: Record<string, string> = {},
): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = spawn(NODE, [ENTRIES[entry], ...args], {
      cwd,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, ...env },
    });
    let stdout = "";
    let stderr = "";
    // "close", not "exit": exit can come before the pipes are drained, and a case would read an empty stderr.
    // A command that hangs fails its own case (exit -1) instead of the whole table.
    const timer = setTimeout(() => child.kill("SIGKILL"), CASE_LIMIT_MS);
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
  });
}

/** Path, mode and content hash of every file under `dir`. */
function snapshotDisk(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, entry.name);
      const st = statSync(p);
      if (entry.isDirectory()) {
        out.push(`${path.relative(dir, p)}/ ${st.mode.toString(8)}`);
        walk(p);
      } else {
        const hash = createHash("sha256").update(readFileSync(p)).digest("hex");
        out.push(`${path.relative(dir, p)} ${st.mode.toString(8)} ${hash}`);
      }
    }
  };
  walk(dir);
  return out.sort();
}

/** Accepts connections and never answers: an RPC that is up but too slow. */
async function silentServer(): Promise<{ url: string; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  return listenOnLoopback(server, () => {
    for (const s of sockets) s.destroy();
  });
}

/** An HTTP server that is not an Ethereum node. */
async function notRpcServer(): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createHttpServer((_req, res) => {
    res.writeHead(404, { "content-type": "text/html" });
    res.end("<html>not here</html>");
  });
  return listenOnLoopback(server, () => server.closeAllConnections());
}

/** Listens on a free loopback port; `close` drops the open connections (`drop`), then waits for the server. */
async function listenOnLoopback(
  server: Server,
  drop: () => void,
): Promise<{ url: string; close: () => Promise<void> }> {
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((r) => {
        drop();
        server.close(() => r());
      }),
  };
}

/** Runs `fn` over `items` with at most `limit` at once. */
async function inBatches<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) await fn(items[next++]);
    }),
  );
}

describe("gpuchain: every bad input is one clear line, the right exit code, and changes nothing", function () {
  this.timeout(900_000); // ~85 child processes; on a loaded 2-core machine each start takes seconds
  const group = new ProcessGroup(() => {});
  const deploymentId = `badinput-${process.pid}`;
  const root = mkdtempSync(path.join(tmpdir(), "gpuchain-badinput-"));
  const vars: Record<string, string> = {};
  const servers: { close: () => Promise<void> }[] = [];
  const chains: JsonRpcProvider[] = [];
  const results = new Map<string, { result: Result; diskBefore: string[]; diskAfter: string[] }>();
  let blocksBefore: number[] = [];
  let blocksAfter: number[] = [];

  before(async function () {
    // The chain under test, a restarted one (same id, no contracts) and one on another chain id.
    vars.rpc = await startAnvil(group, await freePort(0), {}, "main");
    vars.stale = await startAnvil(group, await freePort(0), {}, "stale");
    vars.other = await startAnvil(group, await freePort(0), { chainId: 4242 }, "other");
    const deployed = await deployLocal(vars.rpc, deploymentId);
    const slow = await silentServer();
    const notRpc = await notRpcServer();
    servers.push(slow, notRpc);
    vars.slow = slow.url;
    vars.notrpc = notRpc.url;
    vars.down = `http://127.0.0.1:${await freePort(0)}`; // nothing listens there once freePort closed it
    // The fixtures each case sees: the deployment (with Ignition's journal), keys good and bad, broken files.
    const fixtures = path.join(root, "fixtures");
    mkdirSync(path.join(fixtures, "deployment"), { recursive: true });
    cpSync(path.dirname(deployed), path.join(fixtures, "deployment"), { recursive: true });
    writeKey(path.join(fixtures, "owner.key"), TEST_KEYS.owner);
    writeKey(path.join(fixtures, "client.key"), TEST_KEYS.client);
    writeKey(path.join(fixtures, "open.key"), TEST_KEYS.client);
    chmodSync(path.join(fixtures, "open.key"), 0o644);
    writeKey(path.join(fixtures, "garbage.key"), "not a key");
    mkdirSync(path.join(fixtures, "keys"));
    writeFileSync(path.join(fixtures, "notjson.json"), "{ this is not json");
    writeFileSync(path.join(fixtures, "array.json"), "[]");
    const addresses = JSON.parse(readFileSync(deployed, "utf8")) as Record<string, string>;
    const noEscrow = Object.fromEntries(Object.entries(addresses).filter(([k]) => !k.endsWith("#JobEscrow")));
    writeFileSync(path.join(fixtures, "noescrow.json"), JSON.stringify(noEscrow));
    // The owner approves the small template through the CLI itself (so the dry-run control can get past it).
    const approve = ["job", "approve-template", "blobs-tiny", "--rpc", vars.rpc, "--deployment", deployed];
    const approved = await runCli([...approve, "--key", path.join(fixtures, "owner.key")], process.cwd());
    expect(approved.code, approved.stderr).to.equal(0);
    // The client (test USDC from the token's open faucet) posts job 1 through the CLI: an Open job nobody can take.
    const client = new Wallet(TEST_KEYS.client, new JsonRpcProvider(vars.rpc, undefined, { staticNetwork: true }));
    const { usdc } = connectProtocol(loadDeployment(deployed), client);
    await (await usdc.mint(client.address, 1_000_000n)).wait();
    const create = ["job", "create", "--template", "blobs-tiny", "--steps", "10", "--max-price", "0.001"];
    const posted = await runCli(
      [...create, "--rpc", vars.rpc, "--deployment", deployed, "--key", path.join(fixtures, "client.key")],
      process.cwd(),
    );
    expect(posted.code, posted.stderr).to.equal(0);
    expect(posted.stdout).to.match(/^created job 1 \(tx 0x[0-9a-f]{64}\); budget locked with a permit$/m);
    (client.provider as JsonRpcProvider).destroy();
    chains.push(
      ...[vars.rpc, vars.stale, vars.other].map((u) => new JsonRpcProvider(u, undefined, { staticNetwork: true })),
    );
    blocksBefore = await Promise.all(chains.map((c) => c.getBlockNumber()));

    // Each case in its own copy of the fixtures (its working directory), so a write anywhere in it shows.
    await inBatches(CASES, 4, async (c) => {
      const dir = path.join(root, "case-" + CASES.indexOf(c));
      cpSync(fixtures, dir, { recursive: true });
      const fill = (s: string) =>
        s.replace(/\{(\w+)\}/g, (_m, k: string) =>
          k === "dir" ? dir : k === "dep" ? path.join(dir, "deployment", "deployed_addresses.json") : vars[k],
        );
      const args = c.args.split(" ").filter(Boolean).map(fill);
      const diskBefore = snapshotDisk(dir);
      const result = await runCli(args, dir, c.entry, c.env);
      results.set(c.name, { result, diskBefore, diskAfter: snapshotDisk(dir) });
    });
    blocksAfter = await Promise.all(chains.map((c) => c.getBlockNumber()));
  });

  after(async function () {
    for (const c of chains) c.destroy();
    await Promise.all(servers.map((s) => s.close()));
    await group.stopAll(3_000);
    rmSync(path.join("ignition", "deployments", deploymentId), { recursive: true, force: true });
    rmSync(root, { recursive: true, force: true });
  });

  it(`has at least 40 bad-input cases (${CASES.filter((c) => !c.name.startsWith("control")).length})`, function () {
    expect(CASES.filter((c) => !c.name.startsWith("control") && c.code !== 0).length).to.be.at.least(40);
    expect(new Set(CASES.map((c) => c.name)).size).to.equal(CASES.length);
  });

  for (const c of CASES) {
    it(c.name, function () {
      const { result, diskBefore, diskAfter } = results.get(c.name)!;
      const shown = `exit ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`;
      expect(result.code, shown).to.equal(c.code);
      const out = c.stream === "stdout" ? result.stdout : result.stderr;
      expect(out, shown).to.match(c.message);
      if (!/--debug/.test(c.args)) {
        expect(result.stdout + result.stderr, "no stack trace").not.to.match(/^\s+at .+[:(]/m);
        expect(result.stderr, "no Node error dump").not.to.match(/node:internal|ERR_[A-Z_]+/);
      }
      if (c.code !== 0 && c.stream !== "stdout") {
        const problem = result.stderr.split("\n").filter((l) => PROBLEM_LINE.test(l));
        expect(problem.length, `one line names the problem\n${shown}`).to.be.at.most(1);
      }
      if (c.usage) expect(result.stderr, shown).to.match(/\n\nusage: (gpuchain|npm) /);
      expect(diskAfter, "nothing changed on disk").to.deep.equal(diskBefore);
    });
  }

  it("mined nothing on any chain", function () {
    expect(blocksAfter).to.deep.equal(blocksBefore);
  });

  it("a node that stops mining: the sent transaction is named, the wait is bounded, exit 1", async function () {
    const main = new JsonRpcProvider(vars.rpc, undefined, { staticNetwork: true });
    await main.send("evm_setAutomine", [false]);
    try {
      const dep = path.join(root, "fixtures", "deployment", "deployed_addresses.json");
      const key = path.join(root, "fixtures", "owner.key");
      const args = ["job", "approve-template", "mnist-mlp", "--rpc", vars.rpc, "--deployment", dep, "--key", key];
      const r = await runCli([...args, "--tx-timeout-ms", "1500"], root);
      expect(r.code, r.stderr).to.equal(1);
      expect(r.stdout).to.match(/^approve the template: sent 0x[0-9a-f]{64}, waiting for a block …$/m);
      expect(r.stderr).to.match(
        /^gpuchain: approve the template: transaction 0x[0-9a-f]{64} was not mined within 1\.5 s; it may still land/m,
      );
      expect(r.stderr).not.to.match(/^\s+at /m);
    } finally {
      await main.send("evm_setAutomine", [true]);
      await main.send("evm_mine", []);
      main.destroy();
    }
  });

  it("reserves --watch prints a line per block until Ctrl-C, then the smallest margin", async function () {
    const dep = path.join(root, "fixtures", "deployment", "deployed_addresses.json");
    const child = spawn(NODE, [CLI, "reserves", "--watch", "--rpc", vars.rpc, "--deployment", dep], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    const exited = new Promise<number>((resolve) => child.on("close", (code) => resolve(code ?? -1)));
    const deadline = Date.now() + 30_000;
    while (!/^block \d+: held /m.test(out) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    child.kill("SIGINT");
    expect(await exited, out).to.equal(0);
    expect(out).to.match(/^block \d+: held 0\.010000 USDC, owed 0\.010000 USDC, margin 0\.000000 USDC HOLDS$/m);
    expect(out).to.match(/^smallest margin seen: 0\.000000 USDC → HOLDS$/m);
  });
});
