//! `ModelProto`, `GraphProto`, `NodeProto`, `AttributeProto`, `ValueInfoProto`, `TypeProto`
//! and `FunctionProto`, decoded into owned structures (tensor bytes stay [`Span`]s into the
//! file). Unknown fields are skipped, as protobuf requires; `training_info` and device
//! configurations are skipped too (nothing gpuport runs needs them).

use crate::error::{At, OnnxError};
use crate::tensor::Tensor;
use crate::wire::{Reader, Scalar, Span, push_repeated};

/// Deepest nesting of graphs in attributes (If/Loop bodies) and of types in types.
pub const MAX_DEPTH: usize = 32;

/// `OperatorSetIdProto`: a domain and the opset version the model was written against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpsetId {
    /// The domain (`""` and `ai.onnx` are the default one).
    pub domain: String,
    /// The version.
    pub version: i64,
}

/// `ModelProto`.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    /// `ir_version`.
    pub ir_version: i64,
    /// `opset_import`.
    pub opset_import: Vec<OpsetId>,
    /// `producer_name`.
    pub producer_name: String,
    /// `producer_version`.
    pub producer_version: String,
    /// `domain`.
    pub domain: String,
    /// `model_version`.
    pub model_version: i64,
    /// `doc_string`.
    pub doc_string: String,
    /// `graph`.
    pub graph: Graph,
    /// `metadata_props`, in file order (YOLO exports keep their class `names` here).
    pub metadata_props: Vec<(String, String)>,
    /// `functions`: model-local functions.
    pub functions: Vec<Function>,
}

impl Model {
    /// The opset version imported for `domain` (`""` and `ai.onnx` are one domain).
    pub fn opset(&self, domain: &str) -> Option<i64> {
        let canon = |d: &str| if d == "ai.onnx" { "" } else { d }.to_string();
        self.opset_import
            .iter()
            .find(|o| canon(&o.domain) == canon(domain))
            .map(|o| o.version)
    }

    /// The value of metadata key `key`.
    pub fn metadata(&self, key: &str) -> Option<&str> {
        self.metadata_props
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// `GraphProto`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Graph {
    /// `name`.
    pub name: String,
    /// `node`, in file order (ONNX requires topological order).
    pub nodes: Vec<Node>,
    /// `initializer`.
    pub initializers: Vec<Tensor>,
    /// `sparse_initializer`.
    pub sparse_initializers: Vec<SparseTensor>,
    /// `input` (in IR < 4 it lists the initializers too).
    pub inputs: Vec<ValueInfo>,
    /// `output`.
    pub outputs: Vec<ValueInfo>,
    /// `value_info`: types of intermediate values, when the exporter recorded them.
    pub value_info: Vec<ValueInfo>,
    /// `doc_string`.
    pub doc_string: String,
}

impl Graph {
    /// The initializer named `name`.
    pub fn initializer(&self, name: &str) -> Option<&Tensor> {
        self.initializers.iter().find(|t| t.name == name)
    }

    /// The inputs a caller must feed: those no initializer provides.
    pub fn runtime_inputs(&self) -> impl Iterator<Item = &ValueInfo> {
        self.inputs
            .iter()
            .filter(|i| self.initializer(&i.name).is_none())
    }
}

/// `NodeProto`.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// `name` (may be empty).
    pub name: String,
    /// `op_type`.
    pub op_type: String,
    /// `domain` (empty: the default ONNX domain).
    pub domain: String,
    /// `overload` (for calls of overloaded model-local functions).
    pub overload: String,
    /// `input`: value names; an empty name is an omitted optional input.
    pub inputs: Vec<String>,
    /// `output`.
    pub outputs: Vec<String>,
    /// `attribute`.
    pub attributes: Vec<Attribute>,
    /// `doc_string`.
    pub doc_string: String,
}

impl Node {
    /// The attribute named `name`.
    pub fn attribute(&self, name: &str) -> Option<&Attribute> {
        self.attributes.iter().find(|a| a.name == name)
    }
}

/// `AttributeProto`.
#[derive(Debug, Clone, PartialEq)]
pub struct Attribute {
    /// `name`.
    pub name: String,
    /// `ref_attr_name`: inside a function body, the caller's attribute this one stands for.
    pub ref_attr_name: String,
    /// `doc_string`.
    pub doc_string: String,
    /// The value, of the kind `type` declares.
    pub value: AttributeValue,
}

/// An attribute's value; the variant is the declared `type` (or, in files older than IR 2,
/// the one value field present).
#[derive(Debug, Clone, PartialEq)]
pub enum AttributeValue {
    /// `f`.
    Float(f32),
    /// `i`.
    Int(i64),
    /// `s`: bytes, UTF-8 by convention.
    String(Vec<u8>),
    /// `t`.
    Tensor(Box<Tensor>),
    /// `g`.
    Graph(Box<Graph>),
    /// `sparse_tensor`.
    SparseTensor(Box<SparseTensor>),
    /// `tp`.
    TypeProto(Box<Type>),
    /// `floats`.
    Floats(Vec<f32>),
    /// `ints`.
    Ints(Vec<i64>),
    /// `strings`.
    Strings(Vec<Vec<u8>>),
    /// `tensors`.
    Tensors(Vec<Tensor>),
    /// `graphs`.
    Graphs(Vec<Graph>),
    /// `sparse_tensors`.
    SparseTensors(Vec<SparseTensor>),
    /// `type_protos`.
    TypeProtos(Vec<Type>),
    /// No value of its own: inside a function body, `ref_attr_name` names the caller's
    /// attribute that supplies it; the declared `AttributeType` id is kept.
    Reference(i32),
}

impl AttributeValue {
    /// The `AttributeProto.AttributeType` name of this value (`INTS`).
    pub fn type_name(&self) -> &'static str {
        match self {
            AttributeValue::Float(_) => "FLOAT",
            AttributeValue::Int(_) => "INT",
            AttributeValue::String(_) => "STRING",
            AttributeValue::Tensor(_) => "TENSOR",
            AttributeValue::Graph(_) => "GRAPH",
            AttributeValue::SparseTensor(_) => "SPARSE_TENSOR",
            AttributeValue::TypeProto(_) => "TYPE_PROTO",
            AttributeValue::Floats(_) => "FLOATS",
            AttributeValue::Ints(_) => "INTS",
            AttributeValue::Strings(_) => "STRINGS",
            AttributeValue::Tensors(_) => "TENSORS",
            AttributeValue::Graphs(_) => "GRAPHS",
            AttributeValue::SparseTensors(_) => "SPARSE_TENSORS",
            AttributeValue::TypeProtos(_) => "TYPE_PROTOS",
            AttributeValue::Reference(_) => "REFERENCE",
        }
    }
}

/// `SparseTensorProto`.
#[derive(Debug, Clone, PartialEq)]
pub struct SparseTensor {
    /// `values`: the non-default values, shape `[NNZ]`.
    pub values: Tensor,
    /// `indices`: `[NNZ]` linear or `[NNZ, rank]` coordinates.
    pub indices: Tensor,
    /// `dims` of the dense tensor.
    pub dims: Vec<i64>,
}

/// `ValueInfoProto`.
#[derive(Debug, Clone, PartialEq)]
pub struct ValueInfo {
    /// `name`.
    pub name: String,
    /// `type`, when recorded.
    pub ty: Option<Type>,
    /// `doc_string`.
    pub doc_string: String,
}

/// One dimension of a `TensorShapeProto`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dim {
    /// `dim_value`.
    Value(i64),
    /// `dim_param`: a symbolic dimension (`batch`).
    Param(String),
    /// Neither: unknown.
    Unknown,
}

/// `TypeProto`.
#[derive(Debug, Clone, PartialEq)]
pub enum Type {
    /// `tensor_type`: element type id (0 when unknown) and shape (`None`: unknown rank).
    Tensor {
        /// `elem_type`, a `TensorProto.DataType` id.
        elem_type: i32,
        /// `shape`.
        shape: Option<Vec<Dim>>,
    },
    /// `sparse_tensor_type`.
    SparseTensor {
        /// `elem_type`.
        elem_type: i32,
        /// `shape`.
        shape: Option<Vec<Dim>>,
    },
    /// `sequence_type`.
    Sequence(Option<Box<Type>>),
    /// `map_type`: key type id and value type.
    Map(i32, Option<Box<Type>>),
    /// `optional_type`.
    Optional(Option<Box<Type>>),
    /// No type field set.
    Unset,
}

/// `FunctionProto`: a model-local function.
#[derive(Debug, Clone, PartialEq)]
pub struct Function {
    /// `name`.
    pub name: String,
    /// `domain`.
    pub domain: String,
    /// `overload`.
    pub overload: String,
    /// `input`.
    pub inputs: Vec<String>,
    /// `output`.
    pub outputs: Vec<String>,
    /// `attribute`: names of attributes without defaults.
    pub attributes: Vec<String>,
    /// `attribute_proto`: attributes with defaults.
    pub attribute_protos: Vec<Attribute>,
    /// `node`.
    pub nodes: Vec<Node>,
    /// `opset_import`.
    pub opset_import: Vec<OpsetId>,
}

pub(crate) fn parse_model(file: &[u8], span: Span) -> Result<Model, OnnxError> {
    let at = At::root("model");
    let mut r = Reader::new(file, span);
    let mut m = Model {
        ir_version: 0,
        opset_import: Vec::new(),
        producer_name: String::new(),
        producer_version: String::new(),
        domain: String::new(),
        model_version: 0,
        doc_string: String::new(),
        graph: Graph::default(),
        metadata_props: Vec::new(),
        functions: Vec::new(),
    };
    let mut graph = None;
    while let Some((field, v)) = r.next(&at)? {
        match field {
            1 => m.ir_version = v.int64(&at, "ir_version")?,
            2 => m.producer_name = v.string(file, &at, "producer_name")?,
            3 => m.producer_version = v.string(file, &at, "producer_version")?,
            4 => m.domain = v.string(file, &at, "domain")?,
            5 => m.model_version = v.int64(&at, "model_version")?,
            6 => m.doc_string = v.string(file, &at, "doc_string")?,
            7 => graph = Some(v.bytes(&at, "graph")?),
            8 => {
                let a = at.item("opset_import", m.opset_import.len(), "");
                m.opset_import
                    .push(parse_opset(file, v.bytes(&at, "opset_import")?, &a)?);
            }
            14 => {
                let a = at.item("metadata_props", m.metadata_props.len(), "");
                m.metadata_props
                    .push(parse_entry(file, v.bytes(&at, "metadata_props")?, &a)?);
            }
            25 => {
                let a = at.item("functions", m.functions.len(), "");
                m.functions
                    .push(parse_function(file, v.bytes(&at, "functions")?, &a)?);
            }
            _ => {}
        }
    }
    let Some(graph) = graph else {
        return Err(at.invalid("no `graph`".into()));
    };
    m.graph = parse_graph(file, graph, &at.field("graph"), 0)?;
    Ok(m)
}

fn parse_opset(file: &[u8], span: Span, at: &At) -> Result<OpsetId, OnnxError> {
    let mut r = Reader::new(file, span);
    let mut o = OpsetId {
        domain: String::new(),
        version: 0,
    };
    while let Some((field, v)) = r.next(at)? {
        match field {
            1 => o.domain = v.string(file, at, "domain")?,
            2 => o.version = v.int64(at, "version")?,
            _ => {}
        }
    }
    Ok(o)
}

/// `StringStringEntryProto` as `(key, value)`.
pub(crate) fn parse_entry(file: &[u8], span: Span, at: &At) -> Result<(String, String), OnnxError> {
    let mut r = Reader::new(file, span);
    let (mut key, mut value) = (String::new(), String::new());
    while let Some((field, v)) = r.next(at)? {
        match field {
            1 => key = v.string(file, at, "key")?,
            2 => value = v.string(file, at, "value")?,
            _ => {}
        }
    }
    Ok((key, value))
}

fn deeper(at: &At, depth: usize) -> Result<usize, OnnxError> {
    if depth >= MAX_DEPTH {
        return Err(OnnxError::TooDeep {
            at: at.0.clone(),
            limit: MAX_DEPTH,
        });
    }
    Ok(depth + 1)
}

pub(crate) fn parse_graph(
    file: &[u8],
    span: Span,
    at: &At,
    depth: usize,
) -> Result<Graph, OnnxError> {
    let depth = deeper(at, depth)?;
    let mut r = Reader::new(file, span);
    let mut g = Graph::default();
    while let Some((field, v)) = r.next(at)? {
        match field {
            1 => {
                let a = at.item("node", g.nodes.len(), "");
                g.nodes
                    .push(parse_node(file, v.bytes(at, "node")?, &a, depth)?);
            }
            2 => g.name = v.string(file, at, "name")?,
            5 => {
                let a = at.item("initializer", g.initializers.len(), "");
                g.initializers
                    .push(Tensor::parse(file, v.bytes(at, "initializer")?, &a)?);
            }
            10 => g.doc_string = v.string(file, at, "doc_string")?,
            11..=13 => {
                let (name, list) = match field {
                    11 => ("input", &mut g.inputs),
                    12 => ("output", &mut g.outputs),
                    _ => ("value_info", &mut g.value_info),
                };
                let a = at.item(name, list.len(), "");
                list.push(parse_value_info(file, v.bytes(at, name)?, &a, depth)?);
            }
            15 => {
                let a = at.item("sparse_initializer", g.sparse_initializers.len(), "");
                g.sparse_initializers.push(parse_sparse(
                    file,
                    v.bytes(at, "sparse_initializer")?,
                    &a,
                )?);
            }
            _ => {}
        }
    }
    Ok(g)
}

fn parse_node(file: &[u8], span: Span, at: &At, depth: usize) -> Result<Node, OnnxError> {
    let mut r = Reader::new(file, span);
    let mut n = Node {
        name: String::new(),
        op_type: String::new(),
        domain: String::new(),
        overload: String::new(),
        inputs: Vec::new(),
        outputs: Vec::new(),
        attributes: Vec::new(),
        doc_string: String::new(),
    };
    // Attributes are decoded after the node's name is known, so their errors name it.
    let mut attributes = Vec::new();
    while let Some((field, v)) = r.next(at)? {
        match field {
            1 => n.inputs.push(v.string(file, at, "input")?),
            2 => n.outputs.push(v.string(file, at, "output")?),
            3 => n.name = v.string(file, at, "name")?,
            4 => n.op_type = v.string(file, at, "op_type")?,
            5 => attributes.push(v.bytes(at, "attribute")?),
            6 => n.doc_string = v.string(file, at, "doc_string")?,
            7 => n.domain = v.string(file, at, "domain")?,
            8 => n.overload = v.string(file, at, "overload")?,
            _ => {}
        }
    }
    let label = if n.name.is_empty() {
        &n.op_type
    } else {
        &n.name
    };
    let at = At(format!("{at}({label})"));
    for (i, span) in attributes.into_iter().enumerate() {
        let a = at.item("attribute", i, "");
        n.attributes.push(parse_attribute(file, span, &a, depth)?);
    }
    Ok(n)
}

fn parse_attribute(file: &[u8], span: Span, at: &At, depth: usize) -> Result<Attribute, OnnxError> {
    let mut r = Reader::new(file, span);
    let mut name = String::new();
    let mut ref_attr_name = String::new();
    let mut doc_string = String::new();
    let mut declared = 0i32;
    let mut f = None;
    let mut i = None;
    let mut s = None;
    let mut t = None;
    let mut g = None;
    let mut sparse = None;
    let mut tp = None;
    let mut floats = Vec::new();
    let mut ints = Vec::new();
    let mut strings = Vec::new();
    let mut tensors = Vec::new();
    let mut graphs = Vec::new();
    let mut sparses = Vec::new();
    let mut tps = Vec::new();
    while let Some((field, v)) = r.next(at)? {
        match field {
            1 => name = v.string(file, at, "name")?,
            2 => f = Some(v.float(at, "f")?),
            3 => i = Some(v.int64(at, "i")?),
            4 => s = Some(v.bytes(at, "s")?.of(file).to_vec()),
            5 => t = Some(v.bytes(at, "t")?),
            6 => g = Some(v.bytes(at, "g")?),
            7 => push_repeated(file, v, Scalar::Fixed32, &mut floats, at, "floats", |w| {
                Ok(f32::from_bits(w as u32))
            })?,
            8 => push_repeated(file, v, Scalar::Varint, &mut ints, at, "ints", |w| {
                Ok(w as i64)
            })?,
            9 => strings.push(v.bytes(at, "strings")?.of(file).to_vec()),
            10 => tensors.push(v.bytes(at, "tensors")?),
            11 => graphs.push(v.bytes(at, "graphs")?),
            13 => doc_string = v.string(file, at, "doc_string")?,
            14 => tp = Some(v.bytes(at, "tp")?),
            15 => tps.push(v.bytes(at, "type_protos")?),
            20 => declared = v.int32(at, "type")?,
            21 => ref_attr_name = v.string(file, at, "ref_attr_name")?,
            22 => sparse = Some(v.bytes(at, "sparse_tensor")?),
            23 => sparses.push(v.bytes(at, "sparse_tensors")?),
            _ => {}
        }
    }
    let at = At(format!("{at}({name})"));
    // IR 1 files have no `type`: the value field present decides.
    if declared == 0 {
        declared = if f.is_some() {
            1
        } else if i.is_some() {
            2
        } else if s.is_some() {
            3
        } else if t.is_some() {
            4
        } else if g.is_some() {
            5
        } else if !floats.is_empty() {
            6
        } else if !ints.is_empty() {
            7
        } else if !strings.is_empty() {
            8
        } else if !tensors.is_empty() {
            9
        } else if !graphs.is_empty() {
            10
        } else if sparse.is_some() {
            11
        } else if !sparses.is_empty() {
            12
        } else if tp.is_some() {
            13
        } else if !tps.is_empty() {
            14
        } else if !ref_attr_name.is_empty() {
            0
        } else {
            return Err(at.invalid("attribute without a type or a value".into()));
        };
    }
    let has_value = f.is_some()
        || i.is_some()
        || s.is_some()
        || t.is_some()
        || g.is_some()
        || sparse.is_some()
        || tp.is_some()
        || !floats.is_empty()
        || !ints.is_empty()
        || !strings.is_empty()
        || !tensors.is_empty()
        || !graphs.is_empty()
        || !sparses.is_empty()
        || !tps.is_empty();
    if !ref_attr_name.is_empty() && !has_value {
        return Ok(Attribute {
            name,
            ref_attr_name,
            doc_string,
            value: AttributeValue::Reference(declared),
        });
    }
    let missing = |what: &str| at.invalid(format!("type {what} but no value"));
    let tensor = |span: Span, k: usize| Tensor::parse(file, span, &at.item("tensors", k, ""));
    let value = match declared {
        1 => AttributeValue::Float(f.unwrap_or(0.0)),
        2 => AttributeValue::Int(i.unwrap_or(0)),
        3 => AttributeValue::String(s.unwrap_or_default()),
        4 => {
            let span = t.ok_or_else(|| missing("TENSOR"))?;
            AttributeValue::Tensor(Box::new(Tensor::parse(file, span, &at.field("t"))?))
        }
        5 => {
            let span = g.ok_or_else(|| missing("GRAPH"))?;
            AttributeValue::Graph(Box::new(parse_graph(file, span, &at.field("g"), depth)?))
        }
        6 => AttributeValue::Floats(floats),
        7 => AttributeValue::Ints(ints),
        8 => AttributeValue::Strings(strings),
        9 => AttributeValue::Tensors(
            tensors
                .into_iter()
                .enumerate()
                .map(|(k, span)| tensor(span, k))
                .collect::<Result<_, _>>()?,
        ),
        10 => AttributeValue::Graphs(
            graphs
                .into_iter()
                .enumerate()
                .map(|(k, span)| parse_graph(file, span, &at.item("graphs", k, ""), depth))
                .collect::<Result<_, _>>()?,
        ),
        11 => {
            let span = sparse.ok_or_else(|| missing("SPARSE_TENSOR"))?;
            AttributeValue::SparseTensor(Box::new(parse_sparse(
                file,
                span,
                &at.field("sparse_tensor"),
            )?))
        }
        12 => AttributeValue::SparseTensors(
            sparses
                .into_iter()
                .enumerate()
                .map(|(k, span)| parse_sparse(file, span, &at.item("sparse_tensors", k, "")))
                .collect::<Result<_, _>>()?,
        ),
        13 => {
            let span = tp.ok_or_else(|| missing("TYPE_PROTO"))?;
            AttributeValue::TypeProto(Box::new(parse_type(file, span, &at.field("tp"), depth)?))
        }
        14 => AttributeValue::TypeProtos(
            tps.into_iter()
                .enumerate()
                .map(|(k, span)| parse_type(file, span, &at.item("type_protos", k, ""), depth))
                .collect::<Result<_, _>>()?,
        ),
        other => return Err(at.invalid(format!("attribute type {other} is not an AttributeType"))),
    };
    Ok(Attribute {
        name,
        ref_attr_name,
        doc_string,
        value,
    })
}

fn parse_sparse(file: &[u8], span: Span, at: &At) -> Result<SparseTensor, OnnxError> {
    let mut r = Reader::new(file, span);
    let (mut values, mut indices, mut dims) = (None, None, Vec::new());
    while let Some((field, v)) = r.next(at)? {
        match field {
            1 => {
                values = Some(Tensor::parse(
                    file,
                    v.bytes(at, "values")?,
                    &at.field("values"),
                )?)
            }
            2 => {
                indices = Some(Tensor::parse(
                    file,
                    v.bytes(at, "indices")?,
                    &at.field("indices"),
                )?)
            }
            3 => push_repeated(file, v, Scalar::Varint, &mut dims, at, "dims", |w| {
                Ok(w as i64)
            })?,
            _ => {}
        }
    }
    match (values, indices) {
        (Some(values), Some(indices)) => Ok(SparseTensor {
            values,
            indices,
            dims,
        }),
        _ => Err(at.invalid("sparse tensor without `values` and `indices`".into())),
    }
}

fn parse_value_info(
    file: &[u8],
    span: Span,
    at: &At,
    depth: usize,
) -> Result<ValueInfo, OnnxError> {
    let mut r = Reader::new(file, span);
    let mut vi = ValueInfo {
        name: String::new(),
        ty: None,
        doc_string: String::new(),
    };
    let mut ty = None;
    while let Some((field, v)) = r.next(at)? {
        match field {
            1 => vi.name = v.string(file, at, "name")?,
            2 => ty = Some(v.bytes(at, "type")?),
            3 => vi.doc_string = v.string(file, at, "doc_string")?,
            _ => {}
        }
    }
    if let Some(span) = ty {
        let at = At(format!("{at}({}).type", vi.name));
        vi.ty = Some(parse_type(file, span, &at, depth)?);
    }
    Ok(vi)
}

fn parse_type(file: &[u8], span: Span, at: &At, depth: usize) -> Result<Type, OnnxError> {
    let depth = deeper(at, depth)?;
    let mut r = Reader::new(file, span);
    let mut ty = Type::Unset;
    while let Some((field, v)) = r.next(at)? {
        ty = match field {
            1 | 8 => {
                let (elem_type, shape) = parse_tensor_type(file, v.bytes(at, "tensor_type")?, at)?;
                if field == 1 {
                    Type::Tensor { elem_type, shape }
                } else {
                    Type::SparseTensor { elem_type, shape }
                }
            }
            4 | 9 => {
                let inner = parse_inner(file, v.bytes(at, "elem_type")?, at, depth, 1)?;
                if field == 4 {
                    Type::Sequence(inner)
                } else {
                    Type::Optional(inner)
                }
            }
            5 => {
                let span = v.bytes(at, "map_type")?;
                let mut mr = Reader::new(file, span);
                let mut key = 0;
                while let Some((f, v)) = mr.next(at)? {
                    if f == 1 {
                        key = v.int32(at, "key_type")?;
                    }
                }
                Type::Map(key, parse_inner(file, span, at, depth, 2)?)
            }
            _ => continue,
        };
    }
    Ok(ty)
}

/// The `TypeProto` in field `field` of the message at `span` (a sequence, optional or map).
fn parse_inner(
    file: &[u8],
    span: Span,
    at: &At,
    depth: usize,
    field: u32,
) -> Result<Option<Box<Type>>, OnnxError> {
    let mut r = Reader::new(file, span);
    let mut inner = None;
    while let Some((f, v)) = r.next(at)? {
        if f == field {
            let span = v.bytes(at, "elem_type")?;
            inner = Some(Box::new(parse_type(
                file,
                span,
                &at.field("elem_type"),
                depth,
            )?));
        }
    }
    Ok(inner)
}

fn parse_tensor_type(
    file: &[u8],
    span: Span,
    at: &At,
) -> Result<(i32, Option<Vec<Dim>>), OnnxError> {
    let mut r = Reader::new(file, span);
    let (mut elem, mut shape) = (0, None);
    while let Some((field, v)) = r.next(at)? {
        match field {
            1 => elem = v.int32(at, "elem_type")?,
            2 => {
                let mut dims = Vec::new();
                let mut sr = Reader::new(file, v.bytes(at, "shape")?);
                while let Some((f, v)) = sr.next(at)? {
                    if f != 1 {
                        continue;
                    }
                    let mut dr = Reader::new(file, v.bytes(at, "dim")?);
                    let mut dim = Dim::Unknown;
                    while let Some((f, v)) = dr.next(at)? {
                        match f {
                            1 => dim = Dim::Value(v.int64(at, "dim_value")?),
                            2 => dim = Dim::Param(v.string(file, at, "dim_param")?),
                            _ => {}
                        }
                    }
                    dims.push(dim);
                }
                shape = Some(dims);
            }
            _ => {}
        }
    }
    Ok((elem, shape))
}

fn parse_function(file: &[u8], span: Span, at: &At) -> Result<Function, OnnxError> {
    let mut r = Reader::new(file, span);
    let mut f = Function {
        name: String::new(),
        domain: String::new(),
        overload: String::new(),
        inputs: Vec::new(),
        outputs: Vec::new(),
        attributes: Vec::new(),
        attribute_protos: Vec::new(),
        nodes: Vec::new(),
        opset_import: Vec::new(),
    };
    while let Some((field, v)) = r.next(at)? {
        match field {
            1 => f.name = v.string(file, at, "name")?,
            4 => f.inputs.push(v.string(file, at, "input")?),
            5 => f.outputs.push(v.string(file, at, "output")?),
            6 => f.attributes.push(v.string(file, at, "attribute")?),
            7 => {
                let a = at.item("node", f.nodes.len(), "");
                f.nodes.push(parse_node(file, v.bytes(at, "node")?, &a, 1)?);
            }
            9 => {
                let a = at.item("opset_import", f.opset_import.len(), "");
                f.opset_import
                    .push(parse_opset(file, v.bytes(at, "opset_import")?, &a)?);
            }
            10 => f.domain = v.string(file, at, "domain")?,
            11 => {
                let a = at.item("attribute_proto", f.attribute_protos.len(), "");
                f.attribute_protos.push(parse_attribute(
                    file,
                    v.bytes(at, "attribute_proto")?,
                    &a,
                    1,
                )?);
            }
            13 => f.overload = v.string(file, at, "overload")?,
            _ => {}
        }
    }
    Ok(f)
}
