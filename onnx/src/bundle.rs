//! A ModelPort bundle's `onnx` variant, ready to run: the graph, the manifest's inputs and
//! outputs, and its golden test (`|got − expected| ≤ atol + rtol·|expected|` per element, the
//! variant's tolerance over the manifest's).

use std::path::{Path, PathBuf};

use gpuport_manifest_core::bundle::resolve_inside;
use gpuport_manifest_core::fileref::FileRef;
use gpuport_manifest_core::modelport::{DType, Manifest, Runtime, Tolerance};

use crate::eval::{EvalError, evaluate};
use crate::gpu::GpuModel;
use crate::host::{Data, HostTensor};
use crate::{OnnxError, OnnxModel};

/// Why a bundle could not be opened or its golden test not run.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// The chosen variant is not an `onnx` one.
    #[error("variant `{0}` is not an onnx variant")]
    NotOnnx(String),
    /// A file the manifest names cannot be used (outside the bundle, missing, a URL).
    #[error("{what}: {why}")]
    File {
        /// Which file.
        what: String,
        /// Why.
        why: String,
    },
    /// The model file.
    #[error(transparent)]
    Model(#[from] OnnxError),
    /// Running the graph.
    #[error(transparent)]
    Eval(#[from] EvalError),
    /// A golden file that does not match its tensor's declared dtype and shape, or an output
    /// the graph does not produce.
    #[error("golden `{name}`: {why}")]
    Golden {
        /// The input or output.
        name: String,
        /// Why.
        why: String,
    },
}

/// Where a graph runs.
#[derive(Clone)]
pub enum Device {
    /// The GPU executor ([`GpuModel`]).
    Gpu(std::sync::Arc<gpuport_runtime::Gpu>),
    /// The host reference evaluator ([`evaluate`]): exact, slow, every supported type.
    Host,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Device::Gpu(g) => write!(f, "Gpu({})", g.info().name),
            Device::Host => f.write_str("Host"),
        }
    }
}

/// A graph ready to run on a [`Device`].
#[derive(Debug)]
pub enum Executor {
    /// On the GPU.
    Gpu(GpuModel),
    /// On the host.
    Host(OnnxModel),
}

impl Executor {
    /// `model` on `device`.
    pub fn new(model: OnnxModel, device: &Device) -> Executor {
        match device {
            Device::Gpu(gpu) => Executor::Gpu(GpuModel::new(gpu.clone(), model)),
            Device::Host => Executor::Host(model),
        }
    }

    /// The graph.
    pub fn model(&self) -> &OnnxModel {
        match self {
            Executor::Gpu(g) => g.model(),
            Executor::Host(m) => m,
        }
    }

    /// Runs the graph on `inputs` (by name) and returns its outputs in graph order.
    pub fn run(
        &self,
        inputs: &[(String, HostTensor)],
    ) -> Result<Vec<(String, HostTensor)>, EvalError> {
        match self {
            Executor::Gpu(g) => g.run(inputs),
            Executor::Host(m) => evaluate(m, inputs),
        }
    }
}

/// An `onnx` variant of a bundle, with its graph read.
#[derive(Debug)]
pub struct VisionBundle {
    /// The manifest.
    pub manifest: Manifest,
    /// The bundle folder.
    pub root: PathBuf,
    /// Index of the variant in `manifest.variants`.
    pub variant: usize,
    /// The graph on its device.
    pub executor: Executor,
}

/// One output's golden comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputCheck {
    /// The output.
    pub name: String,
    /// Elements compared.
    pub elements: usize,
    /// Largest `|got − expected|`.
    pub max_abs: f64,
    /// Largest `|got − expected| / |expected|` over elements with `expected ≠ 0`.
    pub max_rel: f64,
    /// The first element outside the tolerance, with the values there.
    pub first_failure: Option<(usize, f64, f64)>,
}

/// The golden test's outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct GoldenReport {
    /// The variant's id.
    pub variant: String,
    /// The tolerance applied.
    pub tolerance: Tolerance,
    /// Each output, in manifest order.
    pub outputs: Vec<OutputCheck>,
}

impl GoldenReport {
    /// Whether every output is within the tolerance.
    pub fn passed(&self) -> bool {
        self.outputs.iter().all(|o| o.first_failure.is_none())
    }
}

fn file_in(root: &Path, what: &str, f: &FileRef) -> Result<PathBuf, BundleError> {
    let rel = f.path().ok_or_else(|| BundleError::File {
        what: what.to_string(),
        why: "a URL file must be fetched into the store first".into(),
    })?;
    let root = std::fs::canonicalize(root).map_err(|e| BundleError::File {
        what: what.to_string(),
        why: e.to_string(),
    })?;
    resolve_inside(&root, rel).map_err(|why| BundleError::File {
        what: what.to_string(),
        why,
    })
}

impl VisionBundle {
    /// Reads variant `variant` of the bundle at `root` (a validated manifest) for `device`.
    pub fn open(
        manifest: Manifest,
        root: &Path,
        variant: usize,
        device: &Device,
    ) -> Result<VisionBundle, BundleError> {
        let v = &manifest.variants[variant];
        if v.runtime != Runtime::Onnx {
            return Err(BundleError::NotOnnx(v.id.clone()));
        }
        let path = file_in(root, &format!("variant `{}` file", v.id), &v.file)?;
        let model = OnnxModel::open(&path)?;
        Ok(VisionBundle {
            manifest,
            root: root.to_path_buf(),
            variant,
            executor: Executor::new(model, device),
        })
    }

    /// Runs the graph on `inputs` (by name) and returns its outputs in graph order.
    pub fn run(
        &self,
        inputs: &[(String, HostTensor)],
    ) -> Result<Vec<(String, HostTensor)>, EvalError> {
        self.executor.run(inputs)
    }

    /// Whether graph input `name` has a symbolic (or unknown) leading dim, so that one call
    /// can take a batch of any size.
    pub fn batches(&self, name: &str) -> bool {
        self.executor
            .model()
            .model()
            .graph
            .runtime_inputs()
            .find(|vi| vi.name == name)
            .and_then(|vi| match &vi.ty {
                Some(crate::model::Type::Tensor {
                    shape: Some(dims), ..
                }) => dims.first().cloned(),
                _ => None,
            })
            .is_some_and(|d| !matches!(d, crate::model::Dim::Value(_)))
    }

    /// Runs one `[1, …]` tensor per item for the graph's one input `name`: as one batched
    /// call when [`VisionBundle::batches`] says the graph takes any batch (every output is
    /// split back along its dim 0; an output without that leading dim is an error), else one
    /// call per item. Returns each item's outputs in graph order.
    pub fn run_items(
        &self,
        name: &str,
        items: Vec<HostTensor>,
    ) -> Result<Vec<Vec<(String, HostTensor)>>, EvalError> {
        if items.len() <= 1 || !self.batches(name) {
            return items
                .into_iter()
                .map(|x| self.run(&[(name.to_string(), x)]))
                .collect();
        }
        let n = items.len();
        let batch = HostTensor::stack(&items).ok_or_else(|| EvalError::Input {
            name: name.to_string(),
            what: "the items differ in type or shape, or are not [1, …]".into(),
        })?;
        let outputs = self.run(&[(name.to_string(), batch)])?;
        (0..n)
            .map(|k| {
                outputs
                    .iter()
                    .map(|(o, t)| {
                        if t.shape.first() != Some(&n) {
                            return Err(EvalError::Graph(format!(
                                "output `{o}` of shape {:?} has no batch dim of {n}",
                                t.shape
                            )));
                        }
                        let item = t
                            .item(k)
                            .ok_or_else(|| EvalError::Graph(format!("output `{o}` item {k}")))?;
                        Ok((o.clone(), item))
                    })
                    .collect()
            })
            .collect()
    }

    /// Runs the golden inputs and compares every golden output.
    pub fn golden(&self) -> Result<Option<GoldenReport>, BundleError> {
        let Some(golden) = &self.manifest.golden else {
            return Ok(None);
        };
        let variant = &self.manifest.variants[self.variant];
        let tolerance = variant.tolerance.unwrap_or(golden.tolerance);
        let mut inputs = Vec::new();
        for spec in &self.manifest.inputs {
            let file = golden
                .inputs
                .get(&spec.name)
                .ok_or_else(|| BundleError::Golden {
                    name: spec.name.clone(),
                    why: "no golden input".into(),
                })?;
            let shape = fixed_shape(&spec.name, &spec.shape)?;
            inputs.push((
                spec.name.clone(),
                self.read_golden(&spec.name, file, spec.dtype, shape)?,
            ));
        }
        let outputs = self.run(&inputs)?;
        let mut checks = Vec::new();
        for spec in &self.manifest.outputs {
            let Some(file) = golden.outputs.get(&spec.name) else {
                continue;
            };
            let (_, got) = outputs
                .iter()
                .find(|(n, _)| *n == spec.name)
                .ok_or_else(|| BundleError::Golden {
                    name: spec.name.clone(),
                    why: "the graph has no output of this name".into(),
                })?;
            let want = self.read_golden(&spec.name, file, spec.dtype, got.shape.clone())?;
            checks.push(compare(&spec.name, got, &want, tolerance));
        }
        Ok(Some(GoldenReport {
            variant: variant.id.clone(),
            tolerance,
            outputs: checks,
        }))
    }

    fn read_golden(
        &self,
        name: &str,
        file: &FileRef,
        dtype: DType,
        shape: Vec<usize>,
    ) -> Result<HostTensor, BundleError> {
        let path = file_in(&self.root, &format!("golden `{name}`"), file)?;
        let bytes = std::fs::read(&path).map_err(|e| BundleError::File {
            what: format!("golden `{name}`"),
            why: e.to_string(),
        })?;
        let bad = |why: String| BundleError::Golden {
            name: name.to_string(),
            why,
        };
        let data = match dtype {
            DType::Float32 => Data::from_le_bytes(crate::DataType::Float, &bytes),
            DType::Int64 => Data::from_le_bytes(crate::DataType::Int64, &bytes),
            DType::Int32 => Data::from_le_bytes(crate::DataType::Int32, &bytes),
            DType::Uint8 => Data::from_le_bytes(crate::DataType::Uint8, &bytes),
            other => return Err(bad(format!("dtype {other:?} is not supported"))),
        }
        .ok_or_else(|| {
            bad(format!(
                "{} bytes are not whole {dtype:?} elements",
                bytes.len()
            ))
        })?;
        let n = data.len();
        HostTensor::new(shape.clone(), data)
            .ok_or_else(|| bad(format!("{n} elements for shape {shape:?}")))
    }
}

fn fixed_shape(
    name: &str,
    dims: &[gpuport_manifest_core::modelport::Dim],
) -> Result<Vec<usize>, BundleError> {
    dims.iter()
        .map(|d| d.fixed().map(|v| v as usize))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| BundleError::Golden {
            name: name.to_string(),
            why: "a golden input needs a fixed shape".into(),
        })
}

/// `got` against `want` under `tol`.
pub fn compare(name: &str, got: &HostTensor, want: &HostTensor, tol: Tolerance) -> OutputCheck {
    let (g, w) = (got.data.to_f64(), want.data.to_f64());
    let mut check = OutputCheck {
        name: name.to_string(),
        elements: w.len(),
        max_abs: 0.0,
        max_rel: 0.0,
        first_failure: None,
    };
    if g.len() != w.len() || got.shape != want.shape {
        check.first_failure = Some((0, f64::NAN, f64::NAN));
        return check;
    }
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        let d = (a - b).abs();
        let d = if d.is_nan() { f64::INFINITY } else { d };
        check.max_abs = check.max_abs.max(d);
        if *b != 0.0 {
            check.max_rel = check.max_rel.max(d / b.abs());
        }
        if d > tol.atol + tol.rtol * b.abs() && check.first_failure.is_none() {
            check.first_failure = Some((i, *a, *b));
        }
    }
    check
}
