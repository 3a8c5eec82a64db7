//! The graph evaluated on the host, node by node, with the CPU reference of every supported
//! op ([`crate::reference`]). It is the executor's specification: the GPU kernels are tested
//! against it, and it is tested against the ONNX backend node tests and onnxruntime.
//!
//! Every op checks the attributes it is given against the ones it implements; an op, an
//! attribute, a mode or an element type outside the supported set is
//! [`EvalError::Unsupported`], never a guess.

use std::collections::HashMap;

use crate::dtype::DataType;
use crate::host::HostTensor;
use crate::model::{AttributeValue, Dim, Node, Type};
use crate::{OnnxError, OnnxModel};

/// The ops of the default domain that the evaluator runs (each within the attributes, modes
/// and types its implementation lists; anything else is [`EvalError::Unsupported`]).
pub const SUPPORTED_OPS: &[&str] = &[
    "Add",
    "AveragePool",
    "BatchNormalization",
    "Cast",
    "Clip",
    "Concat",
    "Constant",
    "ConstantOfShape",
    "Conv",
    "Div",
    "Expand",
    "Flatten",
    "Gather",
    "Gemm",
    "GlobalAveragePool",
    "Identity",
    "MatMul",
    "MaxPool",
    "Mul",
    "Pad",
    "Range",
    "Relu",
    "Reshape",
    "Resize",
    "Shape",
    "Sigmoid",
    "Slice",
    "Softmax",
    "Split",
    "Squeeze",
    "Sub",
    "Transpose",
    "Unsqueeze",
];

/// Why a graph could not be evaluated.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// The model's bytes (an initializer's values).
    #[error(transparent)]
    Onnx(#[from] OnnxError),
    /// An op, attribute, mode or type outside the supported set.
    #[error("unsupported: {op} at node {node}{}: {what}", label(name))]
    Unsupported {
        /// The node's index in the graph.
        node: usize,
        /// Its name.
        name: String,
        /// Its op type.
        op: String,
        /// What is not supported.
        what: String,
    },
    /// A node whose inputs or attributes break the op's rules (shapes that do not broadcast,
    /// an axis out of range, an index out of bounds).
    #[error("{op} at node {node}{}: {what}", label(name))]
    Invalid {
        /// The node's index in the graph.
        node: usize,
        /// Its name.
        name: String,
        /// Its op type.
        op: String,
        /// What is wrong.
        what: String,
    },
    /// A graph input missing, extra, or not of the declared type or shape.
    #[error("input `{name}`: {what}")]
    Input {
        /// The input.
        name: String,
        /// What is wrong.
        what: String,
    },
    /// A graph whose values are not all produced before use, or an initializer of a type the
    /// host cannot hold.
    #[error("graph: {0}")]
    Graph(String),
}

fn label(name: &str) -> String {
    if name.is_empty() {
        String::new()
    } else {
        format!(" ({name})")
    }
}

/// One node's inputs, attributes and error constructors, for the op implementations.
pub(crate) struct Ctx<'a> {
    pub model: &'a OnnxModel,
    pub node: &'a Node,
    pub index: usize,
    /// The default domain's opset version.
    pub opset: i64,
    pub inputs: Vec<Option<&'a HostTensor>>,
}

impl<'a> Ctx<'a> {
    pub fn unsupported(&self, what: impl Into<String>) -> EvalError {
        EvalError::Unsupported {
            node: self.index,
            name: self.node.name.clone(),
            op: self.node.op_type.clone(),
            what: what.into(),
        }
    }

    pub fn invalid(&self, what: impl Into<String>) -> EvalError {
        EvalError::Invalid {
            node: self.index,
            name: self.node.name.clone(),
            op: self.node.op_type.clone(),
            what: what.into(),
        }
    }

    /// Refuses any attribute not in `known`.
    pub fn known(&self, known: &[&str]) -> Result<(), EvalError> {
        match self
            .node
            .attributes
            .iter()
            .find(|a| !known.contains(&a.name.as_str()))
        {
            Some(a) => Err(self.unsupported(format!("attribute `{}`", a.name))),
            None => Ok(()),
        }
    }

    /// Input `i`, which must be present.
    pub fn input(&self, i: usize) -> Result<&'a HostTensor, EvalError> {
        self.opt(i)
            .ok_or_else(|| self.invalid(format!("input {i} is missing")))
    }

    /// Input `i`, when given (an empty name omits an optional input).
    pub fn opt(&self, i: usize) -> Option<&'a HostTensor> {
        self.inputs.get(i).copied().flatten()
    }

    /// How many outputs the node asks for (trailing empty names excluded).
    pub fn outputs(&self) -> usize {
        self.node
            .outputs
            .iter()
            .rposition(|o| !o.is_empty())
            .map_or(0, |p| p + 1)
    }

    fn attr(&self, name: &str) -> Option<&'a AttributeValue> {
        self.node.attribute(name).map(|a| &a.value)
    }

    pub fn int(&self, name: &str, default: i64) -> Result<i64, EvalError> {
        match self.attr(name) {
            None => Ok(default),
            Some(AttributeValue::Int(v)) => Ok(*v),
            Some(v) => {
                Err(self.invalid(format!("attribute `{name}` is {}, not INT", v.type_name())))
            }
        }
    }

    pub fn float(&self, name: &str, default: f32) -> Result<f32, EvalError> {
        match self.attr(name) {
            None => Ok(default),
            Some(AttributeValue::Float(v)) => Ok(*v),
            Some(v) => Err(self.invalid(format!(
                "attribute `{name}` is {}, not FLOAT",
                v.type_name()
            ))),
        }
    }

    pub fn ints(&self, name: &str) -> Result<Option<Vec<i64>>, EvalError> {
        match self.attr(name) {
            None => Ok(None),
            Some(AttributeValue::Ints(v)) => Ok(Some(v.clone())),
            Some(v) => {
                Err(self.invalid(format!("attribute `{name}` is {}, not INTS", v.type_name())))
            }
        }
    }

    pub fn floats(&self, name: &str) -> Result<Option<Vec<f32>>, EvalError> {
        match self.attr(name) {
            None => Ok(None),
            Some(AttributeValue::Floats(v)) => Ok(Some(v.clone())),
            Some(v) => Err(self.invalid(format!(
                "attribute `{name}` is {}, not FLOATS",
                v.type_name()
            ))),
        }
    }

    pub fn string(&self, name: &str, default: &str) -> Result<String, EvalError> {
        match self.attr(name) {
            None => Ok(default.to_string()),
            Some(AttributeValue::String(v)) => String::from_utf8(v.clone())
                .map_err(|_| self.invalid(format!("attribute `{name}` is not UTF-8"))),
            Some(v) => Err(self.invalid(format!(
                "attribute `{name}` is {}, not STRING",
                v.type_name()
            ))),
        }
    }

    pub fn tensor_attr(&self, name: &str) -> Option<&'a crate::tensor::Tensor> {
        match self.attr(name) {
            Some(AttributeValue::Tensor(t)) => Some(t),
            _ => None,
        }
    }

    /// A tensor attribute's values on the host (`None`: they do not fill its shape).
    pub fn tensor_value(&self, t: &crate::tensor::Tensor) -> Result<Option<HostTensor>, EvalError> {
        let vals = self.model.values(t)?;
        let shape = t
            .shape()
            .ok_or_else(|| self.invalid("tensor attribute too large"))?;
        match HostTensor::from_values(t.data_type, shape, &vals) {
            Some(h) => Ok(Some(h)),
            None => Err(self.unsupported(format!("{} tensor attribute", t.data_type))),
        }
    }

    /// An integer input as `i64`s (shape-like inputs: `Reshape`'s shape, `Slice`'s starts).
    pub fn ints_input(&self, i: usize) -> Result<Option<Vec<i64>>, EvalError> {
        match self.opt(i) {
            None => Ok(None),
            Some(t) => t
                .data
                .to_i64()
                .map(Some)
                .ok_or_else(|| self.invalid(format!("input {i} must be an integer tensor"))),
        }
    }

    /// `axis` normalized against `rank` (negative counts from the end).
    pub fn axis(&self, axis: i64, rank: usize) -> Result<usize, EvalError> {
        let r = rank as i64;
        if axis < -r || axis >= r {
            return Err(self.invalid(format!("axis {axis} is out of range for rank {rank}")));
        }
        Ok(if axis < 0 { axis + r } else { axis } as usize)
    }
}

/// Evaluates the model's graph on the host for `inputs` (every graph input that no
/// initializer provides, by name) and returns the graph outputs in order.
pub fn evaluate(
    model: &OnnxModel,
    inputs: &[(String, HostTensor)],
) -> Result<Vec<(String, HostTensor)>, EvalError> {
    let m = model.model();
    let g = &m.graph;
    let opset = m.opset("").unwrap_or(1);
    let mut values: HashMap<&str, HostTensor> = HashMap::new();
    for (name, host) in initializers(model)? {
        values.insert(name, host);
    }
    for (vi, t) in bind_inputs(model, inputs)? {
        values.insert(&vi.name, t.clone());
    }
    for (index, node) in g.nodes.iter().enumerate() {
        let mut ins = Vec::with_capacity(node.inputs.len());
        for name in &node.inputs {
            if name.is_empty() {
                ins.push(None);
                continue;
            }
            ins.push(Some(values.get(name.as_str()).ok_or_else(|| {
                EvalError::Graph(format!(
                    "node {index} ({}) reads `{name}` before anything produces it",
                    node.op_type
                ))
            })?));
        }
        let ctx = Ctx {
            model,
            node,
            index,
            opset,
            inputs: ins,
        };
        if !(node.domain.is_empty() || node.domain == "ai.onnx") {
            return Err(ctx.unsupported(format!("domain `{}`", node.domain)));
        }
        let outs = crate::reference::run(&ctx)?;
        for (name, t) in node.outputs.iter().zip(outs) {
            if !name.is_empty() {
                values.insert(name, t);
            }
        }
    }
    g.outputs
        .iter()
        .map(|o| {
            values
                .remove(o.name.as_str())
                .map(|t| (o.name.clone(), t))
                .ok_or_else(|| EvalError::Graph(format!("output `{}` is never produced", o.name)))
        })
        .collect()
}

/// Every initializer of the graph on the host, by name.
pub(crate) fn initializers(model: &OnnxModel) -> Result<Vec<(&str, HostTensor)>, EvalError> {
    model
        .model()
        .graph
        .initializers
        .iter()
        .map(|t| {
            let v = model.values(t)?;
            let shape = t.shape().ok_or_else(|| {
                EvalError::Graph(format!("initializer `{}` is too large", t.name))
            })?;
            let host = HostTensor::from_values(t.data_type, shape, &v).ok_or_else(|| {
                EvalError::Graph(format!(
                    "initializer `{}`: {} tensors are not supported",
                    t.name, t.data_type
                ))
            })?;
            Ok((t.name.as_str(), host))
        })
        .collect()
}

/// Each graph input no initializer provides, with the given tensor for it: every one given
/// once, none that the graph lacks, each of its declared type and shape (symbolic dims bound
/// consistently).
pub(crate) fn bind_inputs<'m, 'i>(
    model: &'m OnnxModel,
    inputs: &'i [(String, HostTensor)],
) -> Result<Vec<(&'m crate::model::ValueInfo, &'i HostTensor)>, EvalError> {
    let g = &model.model().graph;
    if let Some((name, _)) = inputs
        .iter()
        .find(|(n, _)| !g.runtime_inputs().any(|vi| vi.name == *n))
    {
        return Err(EvalError::Input {
            name: name.clone(),
            what: "is not an input of the graph".into(),
        });
    }
    let mut bindings: HashMap<String, usize> = HashMap::new();
    g.runtime_inputs()
        .map(|vi| {
            let Some((_, t)) = inputs.iter().find(|(n, _)| *n == vi.name) else {
                return Err(EvalError::Input {
                    name: vi.name.clone(),
                    what: "not given".into(),
                });
            };
            check_input(&vi.name, vi.ty.as_ref(), t, &mut bindings)?;
            Ok((vi, t))
        })
        .collect()
}

/// Checks a given input against its declared element type and shape, binding symbolic dims.
fn check_input(
    name: &str,
    ty: Option<&Type>,
    t: &HostTensor,
    bindings: &mut HashMap<String, usize>,
) -> Result<(), EvalError> {
    let bad = |what: String| EvalError::Input {
        name: name.to_string(),
        what,
    };
    let Some(Type::Tensor { elem_type, shape }) = ty else {
        return Err(bad("only tensor inputs are supported".into()));
    };
    if let Some(want) = DataType::from_id(*elem_type)
        && want != t.data.dtype()
    {
        return Err(bad(format!(
            "is {}, the graph declares {want}",
            t.data.dtype()
        )));
    }
    if let Some(dims) = shape {
        if dims.len() != t.shape.len() {
            return Err(bad(format!(
                "has shape {:?}, the graph declares rank {}",
                t.shape,
                dims.len()
            )));
        }
        for (i, (d, got)) in dims.iter().zip(&t.shape).enumerate() {
            match d {
                Dim::Value(v) if *v >= 0 && *v as usize != *got => {
                    return Err(bad(format!("dim {i} is {got}, the graph declares {v}")));
                }
                Dim::Param(p) => {
                    let bound = *bindings.entry(p.clone()).or_insert(*got);
                    if bound != *got {
                        return Err(bad(format!(
                            "dim {i} (`{p}`) is {got}, already bound to {bound}"
                        )));
                    }
                }
                _ => {}
            }
        }
    }
    Ok(())
}
