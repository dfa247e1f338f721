/**
 * The hand-rolled Multicall3 coder (sdk/node/aggregate3.ts) and the word-slicing decoders (sdk/rules/job.ts) against ethers'
 * ABI coder: the same calldata byte for byte, the same results, and a clear error on a malformed answer.
 */
import { expect } from "chai";
import { AbiCoder, getAddress, Interface, hexlify, randomBytes } from "ethers";
import { decodeAggregate3, encodeAggregate3 } from "../../sdk/node/aggregate3.ts";
import { staticDecoder, wordDecoder } from "../../sdk/node/jobReads.ts";
import { MULTICALL3_ABI } from "../../sdk/node/multicall.ts";

const multicall = new Interface(MULTICALL3_ABI);
const address = () => getAddress(hexlify(randomBytes(20)));

describe("sdk: Multicall3 aggregate3 coder", function () {
  it("encodes calldata exactly as the ABI coder does (empty, 1 byte, a word, odd lengths, 200 calls)", function () {
    const sizes = [0, 1, 4, 31, 32, 33, 36, 68, 100];
    const calls = Array.from({ length: 200 }, (_, i) => ({
      target: address(),
      data: hexlify(randomBytes(sizes[i % sizes.length])),
    }));
    for (const set of [[], calls.slice(0, 1), calls.slice(0, 9), calls]) {
      const expected = multicall.encodeFunctionData("aggregate3", [
        set.map((c) => ({ target: c.target, allowFailure: true, callData: c.data })),
      ]);
      expect(encodeAggregate3(set)).to.equal(expected);
    }
  });

  it("decodes results exactly as the ABI coder does, failures included", function () {
    const results = Array.from({ length: 50 }, (_, i) => ({
      success: i % 7 !== 3,
      returnData: hexlify(randomBytes((i * 13) % 90)),
    }));
    const encoded = multicall.encodeFunctionResult("aggregate3", [results]);
    expect(decodeAggregate3(encoded)).to.deep.equal(results.map((r) => ({ success: r.success, data: r.returnData })));
    expect(decodeAggregate3(multicall.encodeFunctionResult("aggregate3", [[]]))).to.deep.equal([]);
  });

  it("refuses a truncated or non-hex answer with a clear error", function () {
    const encoded = multicall.encodeFunctionResult("aggregate3", [[{ success: true, returnData: "0x1234" }]]);
    expect(() => decodeAggregate3(encoded.slice(0, -64))).to.throw(RangeError, /too short/);
    expect(() => decodeAggregate3("0xzz")).to.throw(TypeError, /not hex/);
    expect(() => encodeAggregate3([{ target: "0x12", data: "0x" }])).to.throw(TypeError, /not an address/);
  });

  it("static results by word: a struct, plain outputs and event data decode as the ABI coder does", function () {
    const iface = new Interface([
      "function s() view returns ((address a, uint64 n, uint8 e, bytes32 h, bytes4 f, bool b, int32 m, uint128 v))",
      "function q() view returns (uint128 price, uint32 mem, bool active)",
      "function d() view returns (string name, uint256 x)",
    ]);
    const values = [address(), 2n ** 63n, 7n, hexlify(randomBytes(32)), "0xdeadbeef", true, -5n, 2n ** 127n + 1n];
    const s = staticDecoder(iface, "s")(iface.encodeFunctionResult("s", [values]));
    expect(Object.values(s)).to.deep.equal(values);
    expect(staticDecoder(iface, "q")(iface.encodeFunctionResult("q", [9n, 16_384n, false]))).to.deep.equal({
      price: 9n,
      mem: 16_384n,
      active: false,
    });
    // A dynamic field: the ABI coder decodes it, same shape.
    expect(staticDecoder(iface, "d")(iface.encodeFunctionResult("d", ["gpu", 3n]))).to.deep.equal({
      name: "gpu",
      x: 3n,
    });
    const event = [
      { name: "seed", type: "bytes32" },
      { name: "totalSteps", type: "uint32" },
    ];
    const data = AbiCoder.defaultAbiCoder().encode(["bytes32", "uint32"], [values[3], 600n]);
    expect(wordDecoder(event)!(data)).to.deep.equal({ seed: values[3], totalSteps: 600n });
    expect(wordDecoder([{ name: "s", type: "string" }])).to.equal(undefined);
    expect(() => wordDecoder(event)!("0x" + "00".repeat(32))).to.throw(RangeError, /1 words, expected 2/);
  });
});
