// The subset of onnx.proto (onnx/onnx, proto2, field numbers unchanged) that our graph builder
// writes, as a protobufjs reflection definition. Only encoding is needed; unknown fields never occur.
export const ONNX_SUBSET = {
  nested: {
    onnx: {
      nested: {
        AttributeProto: {
          fields: {
            name: { type: "string", id: 1 },
            type: { type: "int32", id: 20 }, // AttributeType enum, written as its number
            f: { type: "float", id: 2 },
            i: { type: "int64", id: 3 },
            s: { type: "bytes", id: 4 },
            t: { type: "TensorProto", id: 5 },
            g: { type: "GraphProto", id: 6 },
            floats: { rule: "repeated", type: "float", id: 7 },
            ints: { rule: "repeated", type: "int64", id: 8 },
          },
        },
        ValueInfoProto: {
          fields: { name: { type: "string", id: 1 }, type: { type: "TypeProto", id: 2 } },
        },
        NodeProto: {
          fields: {
            input: { rule: "repeated", type: "string", id: 1 },
            output: { rule: "repeated", type: "string", id: 2 },
            name: { type: "string", id: 3 },
            opType: { type: "string", id: 4 },
            domain: { type: "string", id: 7 },
            attribute: { rule: "repeated", type: "AttributeProto", id: 5 },
          },
        },
        ModelProto: {
          fields: {
            irVersion: { type: "int64", id: 1 },
            opsetImport: { rule: "repeated", type: "OperatorSetIdProto", id: 8 },
            producerName: { type: "string", id: 2 },
            producerVersion: { type: "string", id: 3 },
            graph: { type: "GraphProto", id: 7 },
          },
        },
        GraphProto: {
          fields: {
            node: { rule: "repeated", type: "NodeProto", id: 1 },
            name: { type: "string", id: 2 },
            initializer: { rule: "repeated", type: "TensorProto", id: 5 },
            input: { rule: "repeated", type: "ValueInfoProto", id: 11 },
            output: { rule: "repeated", type: "ValueInfoProto", id: 12 },
          },
        },
        TensorProto: {
          fields: {
            dims: { rule: "repeated", type: "int64", id: 1 },
            dataType: { type: "int32", id: 2 },
            floatData: { rule: "repeated", type: "float", id: 4, options: { packed: true } },
            int32Data: { rule: "repeated", type: "int32", id: 5, options: { packed: true } },
            int64Data: { rule: "repeated", type: "int64", id: 7, options: { packed: true } },
            name: { type: "string", id: 8 },
          },
        },
        TensorShapeProto: {
          fields: { dim: { rule: "repeated", type: "Dimension", id: 1 } },
          nested: {
            Dimension: {
              oneofs: { value: { oneof: ["dimValue", "dimParam"] } },
              fields: { dimValue: { type: "int64", id: 1 }, dimParam: { type: "string", id: 2 } },
            },
          },
        },
        TypeProto: {
          fields: { tensorType: { type: "Tensor", id: 1 } },
          nested: {
            Tensor: {
              fields: { elemType: { type: "int32", id: 1 }, shape: { type: "TensorShapeProto", id: 2 } },
            },
          },
        },
        OperatorSetIdProto: {
          fields: { domain: { type: "string", id: 1 }, version: { type: "int64", id: 2 } },
        },
      },
    },
  },
} as const;

// TensorProto.DataType and AttributeProto.AttributeType values used here.
export const DT = { FLOAT: 1, UINT8: 2, INT32: 6, INT64: 7, BOOL: 9 } as const;
export const AT = { FLOAT: 1, INT: 2, STRING: 3, TENSOR: 4, GRAPH: 5, FLOATS: 6, INTS: 7 } as const;
