import { JsonRpcProvider, Wallet, Contract } from "ethers";
import { connectProtocol } from "../sdk/contracts.ts";
import { loadDeployment } from "../sdk/deployment.ts";
const p = new JsonRpcProvider("http://127.0.0.1:8646");
const keys = ["0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80", "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d"];
const owner = new Wallet(keys[0], p), coord = new Wallet(keys[1], p);
const d = loadDeployment("/tmp/agent-smoke-addresses.json");
const [cmd, arg] = process.argv.slice(2);
if (cmd === "fund") { await (await owner.sendTransaction({ to: arg, value: 10n ** 18n })).wait(); console.log("funded"); }
if (cmd === "assign") { const { escrow } = connectProtocol(d, coord); await (await escrow.assign(1n, arg)).wait(); console.log("assigned"); }
if (cmd === "unassign") { const { escrow } = connectProtocol(d, coord); await (await escrow.unassign(1n)).wait(); console.log("unassigned"); }
if (cmd === "job") { const { escrow } = connectProtocol(d, coord); const j = await escrow.jobOf(1n); console.log("epoch", j.epoch, "pending", j.pendingStep, "accepted", j.acceptedStep); }
p.destroy();
