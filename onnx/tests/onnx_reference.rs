//! Every model and test-data tensor of the ONNX backend node tests (shipped in the
//! `onnx==1.22.0` wheel), decoded here and by the `onnx` Python package
//! (`tools/onnx_reference.py`), must summarize identically: names, attributes, types, shapes,
//! which field holds each tensor's values and the SHA-256 of those values in the raw layout.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use gpuport_onnx::{
    AttributeValue, Dim, Graph, Model, Node, OnnxModel, SparseTensor, Storage, Tensor, TensorFile,
    Type, ValueInfo, Values,
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

fn f32_hex(x: f32) -> String {
    x.to_le_bytes().iter().map(|b| format!("{b:02x}")).collect()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|b| format!("{b:02x}")).collect()
}

fn tensor(t: &Tensor, file: &[u8]) -> Value {
    let digest = match t.values(file, None) {
        Ok(Values::Bytes(b)) => hex(&Sha256::digest(&b)),
        Ok(Values::Strings(s)) => {
            let mut h = Sha256::new();
            for e in s {
                h.update((e.len() as u64).to_le_bytes());
                h.update(e);
            }
            hex(&h.finalize())
        }
        Err(e) => format!("error: {e}"),
    };
    let storage = match &t.storage {
        Storage::Empty => "empty",
        Storage::Raw(_) => "raw_data",
        Storage::Floats(_) => "float_data",
        Storage::Int32s(_) => "int32_data",
        Storage::Strings(_) => "string_data",
        Storage::Int64s(_) => "int64_data",
        Storage::Doubles(_) => "double_data",
        Storage::Uint64s(_) => "uint64_data",
        Storage::External(_) => "external",
    };
    json!({"name": t.name, "dims": t.dims, "data_type": t.data_type.name(), "storage": storage,
           "values": digest})
}

fn shape(s: &Option<Vec<Dim>>) -> Value {
    match s {
        None => Value::Null,
        Some(dims) => dims
            .iter()
            .map(|d| match d {
                Dim::Value(v) => json!(v),
                Dim::Param(p) => json!(format!("param:{p}")),
                Dim::Unknown => Value::Null,
            })
            .collect(),
    }
}

fn ty(t: &Type) -> Value {
    let inner = |t: &Option<Box<Type>>| t.as_deref().map_or(Value::Null, ty);
    match t {
        Type::Tensor {
            elem_type,
            shape: s,
        } => json!({"tensor": elem_type, "shape": shape(s)}),
        Type::SparseTensor {
            elem_type,
            shape: s,
        } => json!({"sparse": elem_type, "shape": shape(s)}),
        Type::Sequence(e) => json!({"sequence": inner(e)}),
        Type::Optional(e) => json!({"optional": inner(e)}),
        Type::Map(k, v) => json!({"map": [k, inner(v)]}),
        Type::Unset => Value::Null,
    }
}

fn value_info(v: &ValueInfo) -> Value {
    json!({"name": v.name, "type": v.ty.as_ref().map_or(Value::Null, ty)})
}

fn sparse(s: &SparseTensor, file: &[u8]) -> Value {
    json!({"values": tensor(&s.values, file), "indices": tensor(&s.indices, file), "dims": s.dims})
}

/// `AttributeProto.AttributeType` names by id.
const ATTRIBUTE_TYPES: &[&str] = &[
    "UNDEFINED",
    "FLOAT",
    "INT",
    "STRING",
    "TENSOR",
    "GRAPH",
    "FLOATS",
    "INTS",
    "STRINGS",
    "TENSORS",
    "GRAPHS",
    "SPARSE_TENSOR",
    "SPARSE_TENSORS",
    "TYPE_PROTO",
    "TYPE_PROTOS",
];

fn node(n: &Node, file: &[u8]) -> Value {
    let attributes: Vec<Value> = n
        .attributes
        .iter()
        .map(|a| {
            let v = match &a.value {
                AttributeValue::Reference(id) => {
                    let name = ATTRIBUTE_TYPES.get(*id as usize).copied().unwrap_or("?");
                    return json!({"name": a.name, "type": name, "ref": a.ref_attr_name});
                }
                AttributeValue::Float(f) => json!(f32_hex(*f)),
                AttributeValue::Int(i) => json!(i),
                AttributeValue::String(s) => json!(hex(s)),
                AttributeValue::Tensor(t) => tensor(t, file),
                AttributeValue::Graph(g) => graph(g, file),
                AttributeValue::SparseTensor(s) => sparse(s, file),
                AttributeValue::TypeProto(t) => ty(t),
                AttributeValue::Floats(f) => f.iter().map(|x| json!(f32_hex(*x))).collect(),
                AttributeValue::Ints(i) => json!(i),
                AttributeValue::Strings(s) => s.iter().map(|x| json!(hex(x))).collect(),
                AttributeValue::Tensors(t) => t.iter().map(|x| tensor(x, file)).collect(),
                AttributeValue::Graphs(g) => g.iter().map(|x| graph(x, file)).collect(),
                AttributeValue::SparseTensors(s) => s.iter().map(|x| sparse(x, file)).collect(),
                AttributeValue::TypeProtos(t) => t.iter().map(ty).collect(),
            };
            json!({"name": a.name, "type": a.value.type_name(), "value": v})
        })
        .collect();
    json!({"op": n.op_type, "domain": n.domain, "name": n.name, "inputs": n.inputs,
           "outputs": n.outputs, "attributes": attributes})
}

fn graph(g: &Graph, file: &[u8]) -> Value {
    json!({
        "name": g.name,
        "nodes": g.nodes.iter().map(|n| node(n, file)).collect::<Vec<_>>(),
        "initializers": g.initializers.iter().map(|t| tensor(t, file)).collect::<Vec<_>>(),
        "sparse_initializers": g.sparse_initializers.iter().map(|s| sparse(s, file)).collect::<Vec<_>>(),
        "inputs": g.inputs.iter().map(value_info).collect::<Vec<_>>(),
        "outputs": g.outputs.iter().map(value_info).collect::<Vec<_>>(),
        "value_info": g.value_info.iter().map(value_info).collect::<Vec<_>>(),
    })
}

fn model(m: &Model, file: &[u8]) -> Value {
    let functions: Vec<Value> = m
        .functions
        .iter()
        .map(|f| {
            json!({"name": f.name, "domain": f.domain, "inputs": f.inputs, "outputs": f.outputs,
                   "attributes": f.attributes,
                   "nodes": f.nodes.iter().map(|n| node(n, file)).collect::<Vec<_>>()})
        })
        .collect();
    json!({
        "ir_version": m.ir_version,
        "opsets": m.opset_import.iter().map(|o| json!([o.domain, o.version])).collect::<Vec<_>>(),
        "producer": [m.producer_name, m.producer_version],
        "metadata": m.metadata_props.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>(),
        "functions": functions,
        "graph": graph(&m.graph, file),
    })
}

/// The test-data tensors of `dir` whose graph input/output is a tensor, as the tool lists them.
fn data_sets(m: &Model, dir: &Path) -> serde_json::Map<String, Value> {
    let ins: Vec<&ValueInfo> = m.graph.runtime_inputs().collect();
    let outs: Vec<&ValueInfo> = m.graph.outputs.iter().collect();
    let mut found = serde_json::Map::new();
    let mut sets: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    sets.sort();
    for set in sets.iter().filter(|p| p.is_dir()) {
        let set_name = set.file_name().unwrap().to_string_lossy().to_string();
        if !set_name.starts_with("test_data_set_") {
            continue;
        }
        for f in std::fs::read_dir(set).unwrap() {
            let f = f.unwrap().path();
            let name = f.file_name().unwrap().to_string_lossy().to_string();
            let Some(stem) = name.strip_suffix(".pb") else {
                continue;
            };
            let Some((kind, i)) = stem.split_once('_') else {
                continue;
            };
            let vs = match kind {
                "input" => &ins,
                "output" => &outs,
                _ => continue,
            };
            let i: usize = i.parse().unwrap();
            if !matches!(
                vs.get(i).and_then(|v| v.ty.as_ref()),
                Some(Type::Tensor { .. })
            ) {
                continue;
            }
            let t = TensorFile::open(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            let bytes = std::fs::read(&f).unwrap();
            found.insert(format!("{set_name}/{name}"), tensor(t.tensor(), &bytes));
        }
    }
    found
}

#[test]
fn every_backend_node_test_reads_as_the_onnx_package_reads_it() {
    if !gpuport_testing::python_modules_available(&["onnx", "numpy"]) {
        return;
    }
    let reference: Value = serde_json::from_slice(&gpuport_testing::python_tool(
        "onnx_reference.py",
        &["node-tests".as_ref()],
    ))
    .unwrap();
    let root = Path::new(reference["root"].as_str().unwrap());
    let tests = reference["tests"].as_object().unwrap();
    assert!(
        tests.len() > 1000,
        "only {} node tests found under {}",
        tests.len(),
        root.display()
    );
    let mut failures = Vec::new();
    for (name, want) in tests {
        let dir = root.join(name);
        let m = match OnnxModel::open(&dir.join("model.onnx")) {
            Ok(m) => m,
            Err(e) => {
                failures.push(format!("{name}: {e}"));
                continue;
            }
        };
        let got = json!({"model": model(m.model(), m.bytes()),
                         "data": data_sets(m.model(), &dir)});
        if &got != want {
            let part = ["model", "data"]
                .into_iter()
                .find(|k| got[k] != want[k])
                .unwrap_or("?");
            failures.push(format!(
                "{name}: {part} differs\n  ours:   {}\n  theirs: {}",
                got[part], want[part]
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} node tests differ; the first:\n{}",
        failures.len(),
        tests.len(),
        failures
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
