// A tiny ONNX graph builder: collects nodes, inputs, outputs and constant initializers and encodes
// a ModelProto with protobufjs. Names are generated in a fixed order so the same descriptor always
// yields the same bytes (the bytes are part of the templateId).
import protobuf from "protobufjs";
import { AT, DT, ONNX_SUBSET } from "./schema.ts";

const root = protobuf.Root.fromJSON(ONNX_SUBSET as unknown as protobuf.INamespace);
const ModelProto = root.lookupType("onnx.ModelProto");

export const IR_VERSION = 8; // pairs with opset 17
export const OPSET = 17;

export type Dim = number | string; // string = symbolic dimension
export type Attr = { name: string; type: number; i?: number; f?: number; s?: Uint8Array; ints?: number[]; g?: object };
export type GraphProtoObj = Record<string, unknown>;

export const attrInt = (name: string, i: number): Attr => ({ name, type: AT.INT, i });
export const attrFloat = (name: string, f: number): Attr => ({ name, type: AT.FLOAT, f });
export const attrString = (name: string, s: string): Attr => ({ name, type: AT.STRING, s: Buffer.from(s, "utf8") });
export const attrInts = (name: string, ints: number[]): Attr => ({ name, type: AT.INTS, ints });
export const attrGraph = (name: string, g: GraphProtoObj): Attr => ({ name, type: AT.GRAPH, g });

function valueInfo(name: string, elemType: number, dims?: Dim[]) {
  const tensorType: Record<string, unknown> = { elemType };
  if (dims) {
    tensorType.shape = {
      dim: dims.map((d) => (typeof d === "number" ? { dimValue: d } : { dimParam: d })),
    };
  }
  return { name, type: { tensorType } };
}

/** Decodes model bytes back to a plain object (used to check which ops a graph uses). */
export function decodeModel(bytes: Uint8Array): { graph: GraphProtoObj } {
  return ModelProto.toObject(ModelProto.decode(bytes)) as { graph: GraphProtoObj };
}

export class GraphBuilder {
  name: string;
  private nodes: object[] = [];
  private inputs: object[] = [];
  private outputs: object[] = [];
  private inits: object[] = [];
  private counter = 0;
  private aliases = new Map<string, string>();
  /** Constants shared by value within this graph (see onnx/exact.ts). */
  readonly shared = new Map<string, string>();

  constructor(name: string) {
    this.name = name;
  }

  input(name: string, dims?: Dim[], elemType: number = DT.FLOAT): string {
    this.inputs.push(valueInfo(name, elemType, dims));
    return name;
  }

  /**
   * Marks `value` as a graph output called `name`. A value a node of this graph made is renamed in place (an
   * Identity would copy the whole tensor); a graph input, constant or already-output value gets an Identity.
   */
  output(name: string, value: string, dims?: Dim[], elemType: number = DT.FLOAT): void {
    value = this.aliases.get(value) ?? value;
    if (value !== name && !this.rename(value, name)) this.op("Identity", [value], [], name);
    this.outputs.push(valueInfo(name, elemType, dims));
  }

  private rename(value: string, name: string): boolean {
    type N = { input: string[]; output: string[]; name: string };
    const nodes = this.nodes as N[];
    const maker = nodes.find((n) => n.output.includes(value));
    const isOutput = this.outputs.some((o) => (o as { name: string }).name === value);
    if (!maker || isOutput) return false;
    maker.output = maker.output.map((o) => (o === value ? name : o));
    if (maker.name === value) maker.name = name;
    for (const n of nodes) n.input = n.input.map((i) => (i === value ? name : i));
    this.aliases.set(value, name); // later references to the old name follow it
    return true;
  }

  constFloat(values: number[], dims: number[]): string {
    const name = `c${this.counter++}`;
    this.inits.push({ name, dims, dataType: DT.FLOAT, floatData: values });
    return name;
  }

  /** uint8 (or other ≤ 32-bit integer) constants travel in int32_data (onnx.proto). */
  constInt(values: number[], dims: number[], dataType: number): string {
    const name = `c${this.counter++}`;
    this.inits.push({ name, dims, dataType, int32Data: values });
    return name;
  }

  constInt64(values: number[], dims: number[] = [values.length]): string {
    const name = `c${this.counter++}`;
    this.inits.push({ name, dims, dataType: DT.INT64, int64Data: values });
    return name;
  }

  /** A fresh value name (names follow creation order, so the same graph always gets the same names). */
  fresh(opType: string): string {
    return `t${this.counter++}_${opType}`;
  }

  /** Adds one node; returns its (single) output name. */
  op(opType: string, inputs: string[], attrs: Attr[] = [], outName?: string): string {
    const out = outName ?? this.fresh(opType);
    this.opMulti(opType, inputs, attrs, [out]);
    return out;
  }

  /** Adds one node with several named outputs (e.g. Scan). */
  opMulti(opType: string, inputs: string[], attrs: Attr[], outputs: string[]): void {
    inputs = inputs.map((i) => this.aliases.get(i) ?? i);
    this.nodes.push({ opType, input: inputs, output: outputs, attribute: attrs, name: outputs[0] });
  }

  graph(): GraphProtoObj {
    return {
      name: this.name,
      node: this.nodes,
      input: this.inputs,
      output: this.outputs,
      initializer: this.inits,
    };
  }

  /** Encodes the graph as a standalone ModelProto (bytes handed to onnxruntime). */
  encode(): Uint8Array {
    const model = {
      irVersion: IR_VERSION,
      opsetImport: [{ domain: "", version: OPSET }],
      producerName: "gpuchain-workloads",
      producerVersion: "1",
      graph: this.graph(),
    };
    const err = ModelProto.verify(model);
    if (err) throw new Error(`invalid ModelProto: ${err}`);
    return ModelProto.encode(ModelProto.fromObject(model)).finish();
  }
}
