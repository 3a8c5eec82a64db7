//! ONNX bytes through the reader alone (`gpuport-onnx`, no GPU crate): decoding a model or a
//! lone tensor never panics, and every tensor of a model that decodes either yields its values
//! in the raw layout, exactly as many bytes as its type and shape take, or a typed error; and
//! the host evaluator, fed zeros for every small static input, returns or refuses, never
//! panics.
#![no_main]

use gpuport_onnx::{
    AttributeValue, DataType, Dim, Graph, HostTensor, OnnxModel, Tensor, TensorFile, Type, Values,
    Data, evaluate,
};
use libfuzzer_sys::fuzz_target;

fn check(m: &OnnxModel, t: &Tensor) {
    if let Ok(Values::Bytes(b)) = m.values(t) {
        assert_eq!(Some(b.len() as u64), t.data_type.raw_bytes(t.elems), "tensor {}", t.name);
    }
}

fn walk(m: &OnnxModel, g: &Graph) {
    for t in &g.initializers {
        check(m, t);
    }
    for n in &g.nodes {
        for a in &n.attributes {
            match &a.value {
                AttributeValue::Tensor(t) => check(m, t),
                AttributeValue::Graph(g) => walk(m, g),
                AttributeValue::Tensors(ts) => ts.iter().for_each(|t| check(m, t)),
                AttributeValue::Graphs(gs) => gs.iter().for_each(|g| walk(m, g)),
                _ => {}
            }
        }
    }
}

/// Zeros for every runtime input, when each is a small tensor of static shape.
fn zero_inputs(m: &OnnxModel) -> Option<Vec<(String, HostTensor)>> {
    let mut out = Vec::new();
    for vi in m.model().graph.runtime_inputs() {
        let Some(Type::Tensor { elem_type, shape: Some(dims) }) = &vi.ty else { return None };
        let shape: Vec<usize> = dims
            .iter()
            .map(|d| match d {
                Dim::Value(v) if (0..=64).contains(v) => Some(*v as usize),
                _ => None,
            })
            .collect::<Option<_>>()?;
        let n: usize = shape.iter().product();
        if n > 4096 {
            return None;
        }
        let dtype = DataType::from_id(*elem_type)?;
        let bytes = vec![0u8; dtype.raw_bytes(n as u64)? as usize];
        out.push((vi.name.clone(), HostTensor::new(shape, Data::from_le_bytes(dtype, &bytes)?)?));
    }
    Some(out)
}

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = OnnxModel::parse(data.to_vec(), None) {
        walk(&m, &m.model().graph);
        if let Some(inputs) = zero_inputs(&m) {
            let _ = evaluate(&m, &inputs);
        }
    }
    if let Ok(t) = TensorFile::parse(data.to_vec()) {
        let _ = t.values();
    }
});
