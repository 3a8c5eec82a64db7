//! The ONNX graph on the GPU: planned once per concrete input shape on the host, then run as
//! one compute pass per call.
//!
//! Planning walks the graph in order. A node whose inputs are all known on the host (an
//! initializer, a constant, or anything computed only from those and from shapes — the
//! Shape/Gather/Concat/Range/ConstantOfShape chains detectors build their anchors with) runs
//! on the host through the reference evaluator: that is constant folding, exact by
//! construction. Every other node becomes one kernel launch (or none, for the ops that only
//! rename a buffer: Reshape, Flatten, Squeeze, Unsqueeze, Identity), with its output shape
//! known at plan time. Data movement (Transpose, Slice, Expand, Pad, Resize, Gather, Split,
//! Concat) is planned by running the reference op itself on a tensor of element indices: its
//! output is the index map the copy kernel follows, so the GPU moves exactly the elements the
//! reference would. Convolutions absorb a following ReLU/Clip or SiLU (`x · sigmoid(x)`).
//!
//! Device values are f32. A node the GPU path cannot run is [`EvalError::Unsupported`], never
//! a fallback that silently changes where the work happens.

use std::collections::HashMap;
use std::sync::Arc;

use gpuport_kernels::vision::{Activation, BinaryOp, MatmulParams};
use gpuport_runtime::{Elem, Gpu, GpuError, Recorder, RecorderCache, Tensor, ops};
use parking_lot::Mutex;

use crate::OnnxModel;
use crate::eval::{Ctx, EvalError};
use crate::host::{Data, HostTensor};
use crate::model::Node;

impl From<GpuError> for EvalError {
    fn from(e: GpuError) -> EvalError {
        EvalError::Graph(format!("GPU: {e}"))
    }
}

/// A value while planning: known on the host, or a device tensor.
#[derive(Clone)]
enum Val {
    Host(HostTensor),
    Dev(usize),
}

/// One recorded launch.
enum Step {
    Conv {
        x: usize,
        w: usize,
        b: usize,
        y: usize,
        strides: (usize, usize),
        dilations: (usize, usize),
        pads: (usize, usize),
        groups: usize,
        act: Activation,
        scratch: Option<usize>,
    },
    Binary {
        op: BinaryOp,
        a: usize,
        b: usize,
        out: usize,
        bounds: (f32, f32),
    },
    Pool {
        x: usize,
        y: usize,
        max: bool,
        include_pad: bool,
        kernel: (usize, usize),
        strides: (usize, usize),
        dilations: (usize, usize),
        pads_begin: (usize, usize),
        pads_end: (usize, usize),
    },
    Matmul {
        a: usize,
        b: usize,
        c: usize,
        out: usize,
        params: MatmulParams,
    },
    Softmax {
        x: usize,
        y: usize,
        dims: (usize, usize, usize),
    },
    Gather {
        src: usize,
        map: usize,
        out: usize,
        fill: f32,
    },
    Scatter {
        src: usize,
        map: usize,
        out: usize,
    },
}

impl Step {
    /// The tensor slots the launch reads and the ones it writes.
    fn slots(&self) -> (Vec<usize>, Vec<usize>) {
        match *self {
            Step::Conv {
                x,
                w,
                b,
                y,
                scratch,
                ..
            } => {
                let mut writes = vec![y];
                writes.extend(scratch);
                (vec![x, w, b], writes)
            }
            Step::Binary { a, b, out, .. } => (vec![a, b], vec![out]),
            Step::Pool { x, y, .. } | Step::Softmax { x, y, .. } => (vec![x], vec![y]),
            Step::Matmul { a, b, c, out, .. } => (vec![a, b, c], vec![out]),
            Step::Gather { src, map, out, .. } | Step::Scatter { src, map, out } => {
                (vec![src, map], vec![out])
            }
        }
    }
}

/// Device memory planned by liveness: every buffer a launch writes (activations and scratch,
/// but not the graph's inputs and outputs) lives from its first launch to its last, and
/// buffers whose lives do not overlap share one allocation (the smallest free one that is
/// large enough, else a new one). Lives are closed intervals, so a launch never reads and
/// writes one allocation. Views (reshapes) follow their buffer. Returns the bytes of the
/// buffers before and after.
fn share_buffers(
    gpu: &Gpu,
    tensors: &mut [Tensor],
    steps: &[Step],
    pinned: &[usize],
) -> Result<(u64, u64), EvalError> {
    let key = |t: &Tensor| Arc::as_ptr(&t.buffer) as usize;
    let pinned: std::collections::HashSet<usize> =
        pinned.iter().map(|&s| key(&tensors[s])).collect();
    // Buffer → (first launch, last launch, bytes, written).
    let mut life: HashMap<usize, (usize, usize, u64, bool)> = HashMap::new();
    for (i, step) in steps.iter().enumerate() {
        let (reads, writes) = step.slots();
        for (slot, write) in reads
            .iter()
            .map(|&s| (s, false))
            .chain(writes.iter().map(|&s| (s, true)))
        {
            let t = &tensors[slot];
            let e = life.entry(key(t)).or_insert((i, i, t.buffer.size(), false));
            e.1 = i;
            e.3 |= write;
        }
    }
    let mut movable: Vec<(usize, usize, usize, u64)> = life
        .iter()
        .filter(|(k, l)| l.3 && !pinned.contains(k))
        .map(|(&k, &(first, last, bytes, _))| (first, last, k, bytes))
        .collect();
    movable.sort_unstable();
    let before: u64 = movable.iter().map(|m| m.3).sum();
    // Allocations: (bytes, free after launch, buffer).
    let mut pool: Vec<(u64, usize, Arc<wgpu::Buffer>)> = Vec::new();
    let mut assigned: HashMap<usize, Arc<wgpu::Buffer>> = HashMap::new();
    for (first, last, k, bytes) in movable {
        let fit = pool
            .iter()
            .enumerate()
            .filter(|(_, (size, free_after, _))| *size >= bytes && *free_after < first)
            .min_by_key(|(_, (size, ..))| *size)
            .map(|(i, _)| i);
        let i = match fit {
            Some(i) => i,
            None => {
                pool.push((bytes, 0, gpu.storage_buffer(bytes, "onnx activations")?));
                pool.len() - 1
            }
        };
        pool[i].1 = last;
        assigned.insert(k, pool[i].2.clone());
    }
    for t in tensors.iter_mut() {
        if let Some(b) = assigned.get(&key(t)) {
            t.buffer = b.clone();
        }
    }
    Ok((before, pool.iter().map(|p| p.0).sum()))
}

/// A plan for one set of input shapes: device tensors, launches, where inputs go and outputs
/// come from.
struct Plan {
    tensors: Vec<Tensor>,
    steps: Vec<Step>,
    inputs: Vec<(String, usize)>,
    outputs: Vec<(String, Val)>,
    /// Bytes of the launches' intermediate buffers, one buffer per value and as shared.
    activation_bytes: (u64, u64),
    /// What calls on this plan reuse; held for the whole call.
    state: Mutex<PlanState>,
}

/// A plan's reusable run-time objects.
#[derive(Default)]
struct PlanState {
    /// Uniform buffers and bind groups of the plan's launches.
    cache: RecorderCache,
    /// One mappable buffer per device output, made by the first call.
    staging: Vec<wgpu::Buffer>,
}

/// GPU time of one [`GpuModel::run_profiled`] call.
#[derive(Debug, Clone, Default)]
pub struct RunProfile {
    /// Nanoseconds of the call's compute pass (0 in per-dispatch mode: sum `dispatches`).
    pub pass_ns: f64,
    /// (kernel label, nanoseconds) of each launch, in per-dispatch mode.
    pub dispatches: Vec<(String, f64)>,
    /// Launches recorded.
    pub launches: u64,
}

/// A run's outputs by name, in the graph's order.
pub type Outputs = Vec<(String, HostTensor)>;

/// What a plan is built for: each input's name and shape, sorted by name.
type PlanKey = Vec<(String, Vec<usize>)>;

/// An ONNX model on a GPU. Plans are built on first use of each input shape and kept.
pub struct GpuModel {
    gpu: Arc<Gpu>,
    model: OnnxModel,
    /// Initializers uploaded once, shared by every plan.
    weights: Mutex<HashMap<String, Tensor>>,
    plans: Mutex<HashMap<PlanKey, Arc<Plan>>>,
}

impl std::fmt::Debug for GpuModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuModel")
            .field("model", &self.model)
            .field("plans", &self.plans.lock().len())
            .finish()
    }
}

/// The planner's state for one plan.
struct Planner<'a> {
    gpu: &'a Gpu,
    model: &'a OnnxModel,
    weights: &'a Mutex<HashMap<String, Tensor>>,
    opset: i64,
    tensors: Vec<Tensor>,
    /// Shape of each device tensor (a reshape aliases one buffer under another shape).
    steps: Vec<Step>,
    values: HashMap<String, Val>,
    /// How many nodes read each value (graph outputs count once more).
    readers: HashMap<String, usize>,
    /// The split-K convolutions' shared scratch (the largest so far).
    scratch: Option<usize>,
}

impl GpuModel {
    /// Prepares `model` for `gpu` (nothing is uploaded until the first run).
    pub fn new(gpu: Arc<Gpu>, model: OnnxModel) -> GpuModel {
        GpuModel {
            gpu,
            model,
            weights: Mutex::new(HashMap::new()),
            plans: Mutex::new(HashMap::new()),
        }
    }

    /// The model.
    pub fn model(&self) -> &OnnxModel {
        &self.model
    }

    /// Runs the graph on `inputs` (by name; f32 tensors) and returns its outputs in order.
    ///
    /// One call is one submission: the inputs are written, every launch goes into one compute
    /// pass, the outputs are copied to mappable buffers in the same command stream, and one
    /// wait covers it all. The plan's bind groups, uniform buffers and readback buffers are
    /// made by its first call and reused by every later one; calls on one plan from several
    /// threads take turns (they share its buffers).
    pub fn run(
        &self,
        inputs: &[(String, HostTensor)],
    ) -> Result<Vec<(String, HostTensor)>, EvalError> {
        Ok(self.run_with(inputs, None)?.0)
    }

    /// [`GpuModel::run`] with the call's GPU time measured by timestamps: the pass's
    /// nanoseconds, and with `per_dispatch` each launch's (kernel label, nanoseconds).
    /// Needs the adapter's timestamp queries (inside passes for `per_dispatch`).
    pub fn run_profiled(
        &self,
        inputs: &[(String, HostTensor)],
        per_dispatch: bool,
    ) -> Result<(Outputs, RunProfile), EvalError> {
        let (outputs, profile) = self.run_with(inputs, Some(per_dispatch))?;
        Ok((outputs, profile.unwrap_or_default()))
    }

    /// Bytes of the intermediate buffers of the plan for these inputs' shapes (built if
    /// needed): with one buffer per value, and as planned (buffers shared by liveness).
    pub fn activation_bytes(
        &self,
        inputs: &[(String, HostTensor)],
    ) -> Result<(u64, u64), EvalError> {
        Ok(self.plan_for(inputs)?.activation_bytes)
    }

    fn plan_for(&self, inputs: &[(String, HostTensor)]) -> Result<Arc<Plan>, EvalError> {
        let mut key: PlanKey = inputs
            .iter()
            .map(|(n, t)| (n.clone(), t.shape.clone()))
            .collect();
        key.sort();
        let cached = self.plans.lock().get(&key).cloned();
        if let Some(p) = cached {
            return Ok(p);
        }
        let p = Arc::new(self.plan(inputs)?);
        self.plans.lock().insert(key, p.clone());
        Ok(p)
    }

    fn run_with(
        &self,
        inputs: &[(String, HostTensor)],
        profile: Option<bool>,
    ) -> Result<(Outputs, Option<RunProfile>), EvalError> {
        let plan = self.plan_for(inputs)?;
        let mut state = plan.state.lock();
        for (name, slot) in &plan.inputs {
            let (_, t) =
                inputs
                    .iter()
                    .find(|(n, _)| n == name)
                    .ok_or_else(|| EvalError::Input {
                        name: name.clone(),
                        what: "not given".into(),
                    })?;
            let Data::F32(v) = &t.data else {
                return Err(EvalError::Input {
                    name: name.clone(),
                    what: "the GPU path takes FLOAT inputs".into(),
                });
            };
            self.gpu.queue.write_buffer(
                &plan.tensors[*slot].buffer,
                plan.tensors[*slot].offset,
                bytemuck::cast_slice(v),
            );
        }
        let cache = std::mem::take(&mut state.cache);
        let mut rec = match profile {
            None => Recorder::with_cache(&self.gpu, cache),
            Some(per_dispatch) => Recorder::profiling_with_cache(&self.gpu, cache, per_dispatch)?,
        };
        for step in &plan.steps {
            record(&self.gpu, &mut rec, &plan.tensors, step)?;
        }
        // The readbacks ride in the same submission as the pass.
        if state.staging.is_empty() {
            for (_, v) in &plan.outputs {
                if let Val::Dev(slot) = v {
                    let size = plan.tensors[*slot].padded();
                    let b = self.gpu.scoped("allocating a readback buffer", || {
                        self.gpu.device.create_buffer(&wgpu::BufferDescriptor {
                            label: Some("onnx output readback"),
                            size,
                            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                            mapped_at_creation: false,
                        })
                    })?;
                    state.staging.push(b);
                }
            }
        }
        let device_outputs = plan.outputs.iter().filter_map(|(_, v)| match v {
            Val::Dev(slot) => Some(&plan.tensors[*slot]),
            Val::Host(_) => None,
        });
        for (t, staging) in device_outputs.clone().zip(&state.staging) {
            rec.copy(&t.buffer, t.offset, staging, 0, t.padded());
        }
        let submitted = rec.submit();
        let profile = profile.map(|_| RunProfile {
            pass_ns: rec.pass_times_ns().iter().sum(),
            dispatches: rec.dispatch_times_ns().to_vec(),
            launches: rec.stats().dispatches,
        });
        state.cache = rec.into_cache();
        submitted?;
        let mut pending = Vec::new();
        for staging in &state.staging {
            let (tx, rx) = std::sync::mpsc::channel();
            staging.slice(..).map_async(wgpu::MapMode::Read, move |r| {
                let _ = tx.send(r);
            });
            pending.push(rx);
        }
        self.gpu.wait()?;
        let mut read = Vec::new();
        for ((t, staging), rx) in device_outputs.zip(&state.staging).zip(pending) {
            rx.recv()
                .map_err(|e| GpuError::Readback(e.to_string()))?
                .map_err(|e| GpuError::Readback(e.to_string()))?;
            let values: Vec<f32> = {
                let view = staging
                    .slice(..)
                    .get_mapped_range()
                    .map_err(|e| GpuError::Readback(e.to_string()))?;
                bytemuck::pod_collect_to_vec(&view[..t.bytes as usize])
            };
            staging.unmap();
            read.push(
                HostTensor::f32(t.shape.clone(), values)
                    .ok_or_else(|| EvalError::Graph("readback size".into()))?,
            );
        }
        let mut read = read.into_iter();
        let outputs = plan
            .outputs
            .iter()
            .map(|(name, v)| {
                let t = match v {
                    Val::Host(h) => h.clone(),
                    Val::Dev(_) => read
                        .next()
                        .ok_or_else(|| EvalError::Graph("readback count".into()))?,
                };
                Ok((name.clone(), t))
            })
            .collect::<Result<_, EvalError>>()?;
        Ok((outputs, profile))
    }

    fn plan(&self, inputs: &[(String, HostTensor)]) -> Result<Plan, EvalError> {
        let m = self.model.model();
        let g = &m.graph;
        let mut readers: HashMap<String, usize> = HashMap::new();
        for n in &g.nodes {
            for i in n.inputs.iter().filter(|i| !i.is_empty()) {
                *readers.entry(i.clone()).or_default() += 1;
            }
        }
        for o in &g.outputs {
            *readers.entry(o.name.clone()).or_default() += 1;
        }
        let mut p = Planner {
            gpu: &self.gpu,
            model: &self.model,
            weights: &self.weights,
            opset: m.opset("").unwrap_or(1),
            tensors: Vec::new(),
            steps: Vec::new(),
            values: HashMap::new(),
            readers,
            scratch: None,
        };
        for (name, host) in crate::eval::initializers(&self.model)? {
            p.values.insert(name.to_string(), Val::Host(host));
        }
        let mut input_slots = Vec::new();
        for (vi, t) in crate::eval::bind_inputs(&self.model, inputs)? {
            if !matches!(t.data, Data::F32(_)) {
                return Err(EvalError::Input {
                    name: vi.name.clone(),
                    what: "the GPU path takes FLOAT inputs".into(),
                });
            }
            let slot = p.alloc(&t.shape, &vi.name)?;
            input_slots.push((vi.name.clone(), slot));
            p.values.insert(vi.name.clone(), Val::Dev(slot));
        }
        let mut fused = Fusions::new(&g.nodes);
        for (index, node) in g.nodes.iter().enumerate() {
            if fused.skip.contains(&index) {
                continue;
            }
            let act = if node.op_type == "Conv" {
                p.fused_activation(&g.nodes, index, &mut fused)
            } else {
                None
            };
            p.node(index, node, act)?;
        }
        let outputs: Vec<(String, Val)> = g
            .outputs
            .iter()
            .map(|o| {
                p.values
                    .get(&o.name)
                    .cloned()
                    .map(|v| (o.name.clone(), v))
                    .ok_or_else(|| {
                        EvalError::Graph(format!("output `{}` is never produced", o.name))
                    })
            })
            .collect::<Result<_, _>>()?;
        let mut pinned: Vec<usize> = input_slots.iter().map(|(_, s)| *s).collect();
        pinned.extend(outputs.iter().filter_map(|(_, v)| match v {
            Val::Dev(s) => Some(*s),
            Val::Host(_) => None,
        }));
        let (before, after) = share_buffers(&self.gpu, &mut p.tensors, &p.steps, &pinned)?;
        Ok(Plan {
            tensors: p.tensors,
            steps: p.steps,
            inputs: input_slots,
            outputs,
            activation_bytes: (before, after),
            state: Mutex::new(PlanState::default()),
        })
    }
}

/// Which nodes read each value, and the nodes a convolution's fused activation has absorbed.
struct Fusions {
    readers_of: HashMap<String, Vec<usize>>,
    skip: std::collections::HashSet<usize>,
}

impl Fusions {
    fn new(nodes: &[Node]) -> Fusions {
        let mut readers_of: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, n) in nodes.iter().enumerate() {
            for v in n.inputs.iter().filter(|v| !v.is_empty()) {
                readers_of.entry(v.clone()).or_default().push(i);
            }
        }
        Fusions {
            readers_of,
            skip: Default::default(),
        }
    }
}

fn shape_of(t: &Tensor) -> &[usize] {
    &t.shape
}

impl Planner<'_> {
    /// The activation the convolution `conv` absorbs, if its output's only reader is a Relu, a
    /// Clip with bounds known on the host, or `x · sigmoid(x)` (then read by exactly that Mul
    /// and Sigmoid); the absorbed nodes are added to `fused.skip`. Returns the activation and
    /// the name of the value it produces.
    fn fused_activation(
        &self,
        nodes: &[Node],
        conv: usize,
        fused: &mut Fusions,
    ) -> Option<(Activation, String)> {
        let x = nodes[conv].outputs.first()?;
        let readers = fused.readers_of.get(x)?;
        if self.readers.get(x).copied() != Some(readers.len()) {
            return None; // also a graph output
        }
        let first_output = |n: &Node| n.outputs.first().filter(|o| !o.is_empty()).cloned();
        match readers[..] {
            [r] => {
                let n = &nodes[r];
                let act = match n.op_type.as_str() {
                    "Relu" if n.attributes.is_empty() => Activation::Clamp(0.0, f32::INFINITY),
                    "Clip" if n.inputs.first() == Some(x) => {
                        let host: Vec<Option<&HostTensor>> = n
                            .inputs
                            .iter()
                            .map(|i| match self.values.get(i.as_str()) {
                                Some(Val::Host(h)) => Some(h),
                                _ => None,
                            })
                            .collect();
                        let ctx = Ctx {
                            model: self.model,
                            node: n,
                            index: r,
                            opset: self.opset,
                            inputs: host,
                        };
                        let (lo, hi) = clip_bounds(&ctx).ok()?;
                        Activation::Clamp(lo, hi)
                    }
                    _ => return None,
                };
                let y = first_output(n)?;
                fused.skip.insert(r);
                Some((act, y))
            }
            [a, b] => {
                let (mul, sig) = match (nodes[a].op_type.as_str(), nodes[b].op_type.as_str()) {
                    ("Mul", "Sigmoid") => (a, b),
                    ("Sigmoid", "Mul") => (b, a),
                    _ => return None,
                };
                let s = first_output(&nodes[sig])?;
                let m = &nodes[mul];
                let pair_ok = m.inputs.len() == 2
                    && m.inputs.contains(x)
                    && m.inputs.contains(&s)
                    && fused.readers_of.get(&s).map(Vec::len) == Some(1)
                    && self.readers.get(&s).copied() == Some(1);
                if !pair_ok {
                    return None;
                }
                let y = first_output(m)?;
                fused.skip.insert(mul);
                fused.skip.insert(sig);
                Some((Activation::Silu, y))
            }
            _ => None,
        }
    }

    fn alloc(&mut self, shape: &[usize], what: &str) -> Result<usize, EvalError> {
        let t = self.gpu.zeros_f32(shape, what)?;
        self.tensors.push(t);
        Ok(self.tensors.len() - 1)
    }

    /// A device slot holding `v` (host constants are uploaded; initializers once per model).
    fn dev(&mut self, name: &str, ctx: &Ctx<'_>) -> Result<usize, EvalError> {
        match self.values.get(name).cloned() {
            Some(Val::Dev(s)) => Ok(s),
            Some(Val::Host(h)) => {
                let Data::F32(v) = &h.data else {
                    return Err(ctx.unsupported(format!("a {} tensor on the GPU", h.data.dtype())));
                };
                let cached = self.weights.lock().get(name).cloned();
                let t = match cached {
                    Some(t) => t,
                    None => {
                        let t = self.gpu.upload_f32(v, &h.shape, name)?;
                        self.weights.lock().insert(name.to_string(), t.clone());
                        t
                    }
                };
                self.tensors.push(t);
                let s = self.tensors.len() - 1;
                self.values.insert(name.to_string(), Val::Dev(s));
                Ok(s)
            }
            None => Err(EvalError::Graph(format!(
                "`{name}` is read before anything produces it"
            ))),
        }
    }

    fn shape(&self, name: &str) -> Option<Vec<usize>> {
        match self.values.get(name)? {
            Val::Host(h) => Some(h.shape.clone()),
            Val::Dev(s) => Some(shape_of(&self.tensors[*s]).to_vec()),
        }
    }

    fn node(
        &mut self,
        index: usize,
        node: &Node,
        act: Option<(Activation, String)>,
    ) -> Result<(), EvalError> {
        let host: Vec<Option<HostTensor>> = node
            .inputs
            .iter()
            .map(|i| match self.values.get(i.as_str()) {
                Some(Val::Host(h)) => Some(h.clone()),
                _ => None,
            })
            .collect();
        let all_host = node
            .inputs
            .iter()
            .zip(&host)
            .all(|(name, h)| name.is_empty() || h.is_some());
        if !(node.domain.is_empty() || node.domain == "ai.onnx") {
            return Err(EvalError::Unsupported {
                node: index,
                name: node.name.clone(),
                op: node.op_type.clone(),
                what: format!("domain `{}`", node.domain),
            });
        }
        if all_host {
            if act.is_some() {
                return Err(EvalError::Unsupported {
                    node: index,
                    name: node.name.clone(),
                    op: node.op_type.clone(),
                    what: "a constant convolution with a fused activation".into(),
                });
            }
            // Constant folding: the reference op on host values.
            let ctx = Ctx {
                model: self.model,
                node,
                index,
                opset: self.opset,
                inputs: host.iter().map(Option::as_ref).collect(),
            };
            let outs = crate::reference::run(&ctx)?;
            for (name, t) in node.outputs.iter().zip(outs) {
                if !name.is_empty() {
                    self.values.insert(name.clone(), Val::Host(t));
                }
            }
            return Ok(());
        }
        let ctx = Ctx {
            model: self.model,
            node,
            index,
            opset: self.opset,
            inputs: host.iter().map(Option::as_ref).collect(),
        };
        // Arity once, here: the lowerings below index the inputs and the first output freely.
        let min_inputs = match node.op_type.as_str() {
            "Add" | "Sub" | "Mul" | "Div" | "Conv" | "Gemm" | "MatMul" => 2,
            _ => 1,
        };
        if node.inputs.len() < min_inputs || node.outputs.is_empty() {
            return Err(ctx.invalid(format!(
                "{} inputs and {} outputs",
                node.inputs.len(),
                node.outputs.len()
            )));
        }
        let out_name = node.outputs[0].clone();
        match node.op_type.as_str() {
            "Identity" | "Reshape" | "Flatten" | "Squeeze" | "Unsqueeze" | "Cast" => {
                if node.op_type == "Cast"
                    && ctx.int("to", 0)? != i64::from(crate::DataType::Float.id())
                {
                    return Err(
                        ctx.unsupported("a cast of device values to another type than FLOAT")
                    );
                }
                let (shape, _) = self.moved(&ctx, node)?;
                let src = self.dev(&node.inputs[0], &ctx)?;
                let mut t = self.tensors[src].clone();
                t.shape = shape;
                self.tensors.push(t);
                self.values
                    .insert(out_name, Val::Dev(self.tensors.len() - 1));
            }
            "Shape" => {
                // The shape is known at plan time: a host value from a device input.
                let shape = self.shape(&node.inputs[0]).unwrap_or_default();
                let probe = HostTensor::f32(shape.clone(), vec![0.0; shape.iter().product()])
                    .ok_or_else(|| ctx.invalid("shape"))?;
                let c2 = Ctx {
                    model: self.model,
                    node,
                    index,
                    opset: self.opset,
                    inputs: vec![Some(&probe)],
                };
                let mut outs = crate::reference::run(&c2)?;
                self.values.insert(out_name, Val::Host(outs.remove(0)));
            }
            "Transpose" | "Slice" | "Expand" | "Gather" | "Pad" | "Resize" => {
                if node.op_type == "Gather" && host.get(1).is_none_or(Option::is_none) {
                    return Err(ctx.unsupported("Gather with indices computed on the GPU"));
                }
                if node.op_type == "Resize"
                    && ctx.string("coordinate_transformation_mode", "half_pixel")?
                        == "tf_crop_and_resize"
                {
                    return Err(ctx.unsupported("tf_crop_and_resize on the GPU"));
                }
                let fill = self.fill(&ctx, node)?;
                let (shape, map) = self.moved(&ctx, node)?;
                let src = self.dev(&node.inputs[0], &ctx)?;
                self.gather(src, &map, &shape, fill, out_name)?;
            }
            "Split" => {
                let src = self.dev(&node.inputs[0], &ctx)?;
                let outs = self.index_outputs(&ctx, node, 0)?;
                for (name, out) in node.outputs.iter().zip(outs) {
                    if !name.is_empty() {
                        self.gather(src, &out.data, &out.shape, 0.0, name.clone())?;
                    }
                }
            }
            "Concat" => self.concat(&ctx, node)?,
            "Conv" => self.conv(&ctx, node, act)?,
            "Add" | "Sub" | "Mul" | "Div" => {
                let op = match node.op_type.as_str() {
                    "Add" => BinaryOp::Add,
                    "Sub" => BinaryOp::Sub,
                    "Mul" => BinaryOp::Mul,
                    _ => BinaryOp::Div,
                };
                let (sa, sb) = (self.shape(&node.inputs[0]), self.shape(&node.inputs[1]));
                let (Some(sa), Some(sb)) = (sa, sb) else {
                    return Err(ctx.invalid("operand missing"));
                };
                let shape = crate::reference::broadcast_shape(&sa, &sb).ok_or_else(|| {
                    ctx.invalid(format!("shapes {sa:?} and {sb:?} do not broadcast"))
                })?;
                let a = self.dev(&node.inputs[0], &ctx)?;
                let b = self.dev(&node.inputs[1], &ctx)?;
                let out = self.alloc(&shape, &out_name)?;
                self.steps.push(Step::Binary {
                    op,
                    a,
                    b,
                    out,
                    bounds: (0.0, 0.0),
                });
                self.values.insert(out_name, Val::Dev(out));
            }
            "Sigmoid" | "Relu" | "Clip" => {
                let (op, bounds) = match node.op_type.as_str() {
                    "Sigmoid" => (BinaryOp::Sigmoid, (0.0, 0.0)),
                    "Relu" => (BinaryOp::Clamp, (0.0, f32::INFINITY)),
                    _ => (BinaryOp::Clamp, clip_bounds(&ctx)?),
                };
                ctx.known(if node.op_type == "Clip" {
                    &["min", "max"]
                } else {
                    &[]
                })?;
                let a = self.dev(&node.inputs[0], &ctx)?;
                let shape = self.tensors[a].shape.clone();
                let out = self.alloc(&shape, &out_name)?;
                self.steps.push(Step::Binary {
                    op,
                    a,
                    b: a,
                    out,
                    bounds,
                });
                self.values.insert(out_name, Val::Dev(out));
            }
            "MaxPool" | "AveragePool" | "GlobalAveragePool" => self.pool(&ctx, node)?,
            "Gemm" | "MatMul" => self.matmul(&ctx, node)?,
            "Softmax" => {
                ctx.known(&["axis"])?;
                let x = self.dev(&node.inputs[0], &ctx)?;
                let shape = self.tensors[x].shape.clone();
                let r = shape.len();
                let axis = ctx.axis(ctx.int("axis", if self.opset >= 13 { -1 } else { 1 })?, r)?;
                let dims = if self.opset >= 13 {
                    (
                        shape[..axis].iter().product(),
                        shape[axis],
                        shape[axis + 1..].iter().product(),
                    )
                } else {
                    (
                        shape[..axis].iter().product(),
                        shape[axis..].iter().product(),
                        1,
                    )
                };
                let y = self.alloc(&shape, &out_name)?;
                self.steps.push(Step::Softmax { x, y, dims });
                self.values.insert(out_name, Val::Dev(y));
            }
            "BatchNormalization" => self.batch_norm(&ctx, node)?,
            op => return Err(ctx.unsupported(format!("op `{op}` on the GPU"))),
        }
        Ok(())
    }

    /// The constant a data-movement op writes where it reads no element (Pad's value).
    fn fill(&self, ctx: &Ctx<'_>, node: &Node) -> Result<f32, EvalError> {
        if node.op_type != "Pad" {
            return Ok(0.0);
        }
        if self.opset < 11 {
            return ctx.float("value", 0.0);
        }
        Ok(match ctx.opt(2) {
            Some(t) => t.data.to_f64().first().copied().unwrap_or(0.0) as f32,
            None => 0.0,
        })
    }

    /// The reference op run on element indices in place of input `data` (other inputs as the
    /// plan knows them): each output is its shape and index map, `u32::MAX` where no element
    /// is read.
    fn index_outputs(
        &self,
        ctx: &Ctx<'_>,
        node: &Node,
        data: usize,
    ) -> Result<Vec<IndexMap>, EvalError> {
        let shape = self
            .shape(&node.inputs[data])
            .ok_or_else(|| ctx.invalid("input missing"))?;
        // The plan is keyed by input shapes: every other operand (starts, pads, scales…) must
        // be known now.
        if let Some((i, _)) = node
            .inputs
            .iter()
            .enumerate()
            .find(|(i, name)| *i != data && !name.is_empty() && ctx.inputs[*i].is_none())
        {
            return Err(ctx.unsupported(format!(
                "input {i} computed at run time (the GPU plan needs it at plan time)"
            )));
        }
        let n: usize = shape.iter().product();
        let probe = HostTensor::new(shape, Data::I64((0..n as i64).collect()))
            .ok_or_else(|| ctx.invalid("probe"))?;
        let marker =
            HostTensor::new(vec![], Data::I64(vec![-1])).ok_or_else(|| ctx.invalid("probe"))?;
        let mut inputs: Vec<Option<&HostTensor>> = ctx.inputs.clone();
        inputs[data] = Some(&probe);
        if node.op_type == "Pad" && self.opset >= 11 && inputs.len() > 2 && inputs[2].is_some() {
            inputs[2] = Some(&marker);
        }
        let c2 = Ctx {
            model: self.model,
            node,
            index: ctx.index,
            opset: self.opset,
            inputs,
        };
        let outs = crate::reference::run(&c2)?;
        outs.into_iter()
            .map(|t| {
                let Data::I64(v) = t.data else {
                    return Err(ctx.invalid("index map"));
                };
                let data = v
                    .into_iter()
                    .map(|i| u32::try_from(i).unwrap_or(u32::MAX))
                    .collect();
                Ok(IndexMap {
                    shape: t.shape,
                    data,
                })
            })
            .collect()
    }

    /// The output shape and index map of a one-output data-movement op.
    fn moved(&self, ctx: &Ctx<'_>, node: &Node) -> Result<(Vec<usize>, Vec<u32>), EvalError> {
        let mut outs = self.index_outputs(ctx, node, 0)?;
        let o = outs.pop().ok_or_else(|| ctx.invalid("no output"))?;
        Ok((o.shape, o.data))
    }

    fn gather(
        &mut self,
        src: usize,
        map: &[u32],
        shape: &[usize],
        fill: f32,
        name: String,
    ) -> Result<(), EvalError> {
        let map_t = self.gpu.upload(
            bytemuck::cast_slice(map),
            Elem::U32,
            &[map.len()],
            "index map",
        )?;
        self.tensors.push(map_t);
        let map_slot = self.tensors.len() - 1;
        let out = self.alloc(shape, &name)?;
        self.steps.push(Step::Gather {
            src,
            map: map_slot,
            out,
            fill,
        });
        self.values.insert(name, Val::Dev(out));
        Ok(())
    }

    /// Concat: every input scattered to its place in the output (the reference Concat, fed
    /// one input's element indices and −1 elsewhere, says where each element lands).
    fn concat(&mut self, ctx: &Ctx<'_>, node: &Node) -> Result<(), EvalError> {
        let shapes: Vec<Vec<usize>> = node
            .inputs
            .iter()
            .map(|i| self.shape(i).ok_or_else(|| ctx.invalid("input missing")))
            .collect::<Result<_, _>>()?;
        let probes: Vec<HostTensor> = shapes
            .iter()
            .map(|s| {
                HostTensor::new(s.clone(), Data::I64(vec![-1; s.iter().product()]))
                    .ok_or_else(|| ctx.invalid("probe"))
            })
            .collect::<Result<_, _>>()?;
        let out_name = node.outputs[0].clone();
        let mut out_slot = None;
        for (k, shape) in shapes.iter().enumerate() {
            let n: usize = shape.iter().product();
            let mine = HostTensor::new(shape.clone(), Data::I64((0..n as i64).collect()))
                .ok_or_else(|| ctx.invalid("probe"))?;
            let inputs: Vec<Option<&HostTensor>> = (0..node.inputs.len())
                .map(|j| Some(if j == k { &mine } else { &probes[j] }))
                .collect();
            let c2 = Ctx {
                model: self.model,
                node,
                index: ctx.index,
                opset: self.opset,
                inputs,
            };
            let out = crate::reference::run(&c2)?.remove(0);
            let Data::I64(v) = &out.data else {
                return Err(ctx.invalid("index map"));
            };
            let mut map = vec![0u32; n];
            for (pos, i) in v.iter().enumerate() {
                if *i >= 0 {
                    map[*i as usize] = pos as u32;
                }
            }
            let slot = match out_slot {
                Some(s) => s,
                None => {
                    let s = self.alloc(&out.shape, &out_name)?;
                    out_slot = Some(s);
                    s
                }
            };
            if n == 0 {
                continue;
            }
            let src = self.dev(&node.inputs[k], ctx)?;
            let map_t =
                self.gpu
                    .upload(bytemuck::cast_slice(&map), Elem::U32, &[n], "concat map")?;
            self.tensors.push(map_t);
            let map_slot = self.tensors.len() - 1;
            self.steps.push(Step::Scatter {
                src,
                map: map_slot,
                out: slot,
            });
        }
        let slot = out_slot.ok_or_else(|| ctx.invalid("no inputs"))?;
        self.values.insert(out_name, Val::Dev(slot));
        Ok(())
    }

    fn conv(
        &mut self,
        ctx: &Ctx<'_>,
        node: &Node,
        act: Option<(Activation, String)>,
    ) -> Result<(), EvalError> {
        ctx.known(&[
            "auto_pad",
            "dilations",
            "group",
            "kernel_shape",
            "pads",
            "strides",
        ])?;
        let xs = self
            .shape(&node.inputs[0])
            .ok_or_else(|| ctx.invalid("input missing"))?;
        let ws = self
            .shape(&node.inputs[1])
            .ok_or_else(|| ctx.invalid("weights missing"))?;
        if xs.len() != 4 || ws.len() != 4 {
            return Err(ctx.unsupported(format!(
                "a {}-D convolution on the GPU",
                xs.len().saturating_sub(2)
            )));
        }
        let win = crate::reference::window(ctx, &xs[2..], ws[2..].to_vec(), false)?;
        let groups = usize::try_from(ctx.int("group", 1)?).map_err(|_| ctx.invalid("group"))?;
        let x = self.dev(&node.inputs[0], ctx)?;
        let w = self.dev(&node.inputs[1], ctx)?;
        let b = match node.inputs.get(2).filter(|b| !b.is_empty()) {
            Some(b) => self.dev(b, ctx)?,
            None => self.alloc(&[ws[0]], "zero bias")?,
        };
        let (act, out_name) = act.unwrap_or((Activation::None, node.outputs[0].clone()));
        let y = self.alloc(&[xs[0], ws[0], win.out[0], win.out[1]], &out_name)?;
        let need = ops::conv_scratch_elems(
            groups,
            xs[0],
            xs[1],
            ws[0],
            (ws[2], ws[3]),
            (win.out[0], win.out[1]),
        );
        let scratch = match self.scratch {
            _ if need == 0 => None,
            Some(s) if self.tensors[s].shape[0] >= need => Some(s),
            _ => {
                // Launches run in order inside the pass, so one scratch serves every split
                // convolution of the plan; a larger need gets a larger one.
                let s = self.alloc(&[need], "split-K partial sums")?;
                self.scratch = Some(s);
                Some(s)
            }
        };
        self.steps.push(Step::Conv {
            x,
            w,
            b,
            y,
            strides: (win.strides[0], win.strides[1]),
            dilations: (win.dilations[0], win.dilations[1]),
            pads: (win.pad_begin[0], win.pad_begin[1]),
            groups,
            act,
            scratch,
        });
        self.values.insert(out_name, Val::Dev(y));
        Ok(())
    }

    fn pool(&mut self, ctx: &Ctx<'_>, node: &Node) -> Result<(), EvalError> {
        let xs = self
            .shape(&node.inputs[0])
            .ok_or_else(|| ctx.invalid("input missing"))?;
        if xs.len() != 4 {
            return Err(ctx.unsupported(format!(
                "{}-D pooling on the GPU",
                xs.len().saturating_sub(2)
            )));
        }
        let out_name = node.outputs[0].clone();
        let x = self.dev(&node.inputs[0], ctx)?;
        let (y, step) = if node.op_type == "GlobalAveragePool" {
            ctx.known(&[])?;
            let y = self.alloc(&[xs[0], xs[1], 1, 1], &out_name)?;
            (
                y,
                Step::Pool {
                    x,
                    y,
                    max: false,
                    include_pad: false,
                    kernel: (xs[2], xs[3]),
                    strides: (1, 1),
                    dilations: (1, 1),
                    pads_begin: (0, 0),
                    pads_end: (0, 0),
                },
            )
        } else {
            let (max, include_pad, win) = crate::reference::pool_window(ctx, &xs)?;
            let y = self.alloc(&[xs[0], xs[1], win.out[0], win.out[1]], &out_name)?;
            (
                y,
                Step::Pool {
                    x,
                    y,
                    max,
                    include_pad,
                    kernel: (win.kernel[0], win.kernel[1]),
                    strides: (win.strides[0], win.strides[1]),
                    dilations: (win.dilations[0], win.dilations[1]),
                    pads_begin: (win.pad_begin[0], win.pad_begin[1]),
                    pads_end: (win.pad_end[0], win.pad_end[1]),
                },
            )
        };
        self.steps.push(step);
        self.values.insert(out_name, Val::Dev(y));
        Ok(())
    }

    fn matmul(&mut self, ctx: &Ctx<'_>, node: &Node) -> Result<(), EvalError> {
        let gemm = node.op_type == "Gemm";
        ctx.known(if gemm {
            &["alpha", "beta", "transA", "transB"]
        } else {
            &[]
        })?;
        let sa = self
            .shape(&node.inputs[0])
            .ok_or_else(|| ctx.invalid("A missing"))?;
        let sb = self
            .shape(&node.inputs[1])
            .ok_or_else(|| ctx.invalid("B missing"))?;
        let out_name = node.outputs[0].clone();
        let (params, shape, bias) = if gemm {
            let (ta, tb) = (ctx.int("transA", 0)? != 0, ctx.int("transB", 0)? != 0);
            let ([a0, a1], [b0, b1]) = (
                <[usize; 2]>::try_from(&sa[..]).map_err(|_| ctx.invalid("A must be a matrix"))?,
                <[usize; 2]>::try_from(&sb[..]).map_err(|_| ctx.invalid("B must be a matrix"))?,
            );
            let (m, k) = if ta { (a1, a0) } else { (a0, a1) };
            let (k2, n) = if tb { (b1, b0) } else { (b0, b1) };
            if k != k2 {
                return Err(ctx.invalid(format!("A {sa:?} and B {sb:?} do not multiply")));
            }
            let beta = ctx.float("beta", 1.0)?;
            let bias = node.inputs.get(2).filter(|c| !c.is_empty()).cloned();
            let (c_row, c_col) = match &bias {
                None => (0, 0),
                Some(c) => {
                    let cs = self.shape(c).ok_or_else(|| ctx.invalid("C missing"))?;
                    match cs[..] {
                        [] | [1] | [1, 1] => (0, 0),
                        [x] if x == n => (0, 1),
                        [1, x] if x == n => (0, 1),
                        [x, 1] if x == m => (1, 0),
                        [x, y] if x == m && y == n => (n, 1),
                        _ => {
                            return Err(
                                ctx.invalid(format!("C {cs:?} does not broadcast to [{m}, {n}]"))
                            );
                        }
                    }
                }
            };
            let params = MatmulParams {
                batch: 1,
                m: m as u32,
                n: n as u32,
                k: k as u32,
                a_batch: 0,
                a_row: if ta { 1 } else { k as u32 },
                a_col: if ta { m as u32 } else { 1 },
                b_batch: 0,
                b_row: if tb { 1 } else { n as u32 },
                b_col: if tb { k as u32 } else { 1 },
                c_row: c_row as u32,
                c_col: c_col as u32,
                alpha: ctx.float("alpha", 1.0)?,
                beta: if bias.is_some() { beta } else { 0.0 },
                grid_x: 0,
                pad: 0,
            };
            (params, vec![m, n], bias)
        } else {
            if sa.is_empty() || sb.is_empty() {
                return Err(ctx.invalid("MatMul of a scalar"));
            }
            let ash = if sa.len() == 1 {
                vec![1, sa[0]]
            } else {
                sa.clone()
            };
            let bsh = if sb.len() == 1 {
                vec![sb[0], 1]
            } else {
                sb.clone()
            };
            let (m, k) = (ash[ash.len() - 2], ash[ash.len() - 1]);
            let (k2, n) = (bsh[bsh.len() - 2], bsh[bsh.len() - 1]);
            if k != k2 {
                return Err(ctx.invalid(format!("A {sa:?} and B {sb:?} do not multiply")));
            }
            let (ba, bb) = (&ash[..ash.len() - 2], &bsh[..bsh.len() - 2]);
            let batch_shape = crate::reference::broadcast_shape(ba, bb)
                .ok_or_else(|| ctx.invalid("batch dims do not broadcast"))?;
            let batch: usize = batch_shape.iter().product();
            let whole = |b: &[usize]| {
                b.iter().product::<usize>() == batch || b.iter().product::<usize>() == 1
            };
            if !whole(ba) || !whole(bb) {
                return Err(ctx.unsupported("partially broadcast MatMul batches on the GPU"));
            }
            let ab = if ba.iter().product::<usize>() == 1 {
                0
            } else {
                m * k
            };
            let bbs = if bb.iter().product::<usize>() == 1 {
                0
            } else {
                k * n
            };
            let mut shape = batch_shape;
            if sa.len() > 1 {
                shape.push(m);
            }
            if sb.len() > 1 {
                shape.push(n);
            }
            let params = MatmulParams {
                batch: batch as u32,
                m: m as u32,
                n: n as u32,
                k: k as u32,
                a_batch: ab as u32,
                a_row: k as u32,
                a_col: 1,
                b_batch: bbs as u32,
                b_row: n as u32,
                b_col: 1,
                c_row: 0,
                c_col: 0,
                alpha: 1.0,
                beta: 0.0,
                grid_x: 0,
                pad: 0,
            };
            (params, shape, None)
        };
        let a = self.dev(&node.inputs[0], ctx)?;
        let b = self.dev(&node.inputs[1], ctx)?;
        let c = match bias {
            Some(c) => self.dev(&c, ctx)?,
            None => a,
        };
        let out = self.alloc(&shape, &out_name)?;
        self.steps.push(Step::Matmul {
            a,
            b,
            c,
            out,
            params,
        });
        self.values.insert(out_name, Val::Dev(out));
        Ok(())
    }

    /// Inference batch norm as `x · scale' + shift'` per channel, the constants made here.
    fn batch_norm(&mut self, ctx: &Ctx<'_>, node: &Node) -> Result<(), EvalError> {
        ctx.known(&["epsilon", "momentum", "training_mode", "spatial"])?;
        if ctx.int("training_mode", 0)? != 0 || ctx.outputs() > 1 || ctx.int("spatial", 1)? != 1 {
            return Err(ctx.unsupported("training mode"));
        }
        let xs = self
            .shape(&node.inputs[0])
            .ok_or_else(|| ctx.invalid("input missing"))?;
        let c = *xs.get(1).ok_or_else(|| ctx.invalid("no channel dim"))?;
        let param = |i: usize| -> Result<Vec<f64>, EvalError> {
            let t = ctx
                .opt(i)
                .ok_or_else(|| ctx.unsupported("batch-norm parameters computed on the GPU"))?;
            if t.shape != [c] {
                return Err(ctx.invalid(format!("input {i} {:?} is not [{c}]", t.shape)));
            }
            Ok(t.data.to_f64())
        };
        let (scale, bias, mean, var) = (param(1)?, param(2)?, param(3)?, param(4)?);
        let eps = f64::from(ctx.float("epsilon", 1e-5)?);
        let k: Vec<f32> = (0..c)
            .map(|i| (scale[i] / (var[i] + eps).sqrt()) as f32)
            .collect();
        let s: Vec<f32> = (0..c)
            .map(|i| (bias[i] - mean[i] * f64::from(k[i])) as f32)
            .collect();
        let mut bshape = vec![c];
        bshape.extend(vec![1; xs.len() - 2]);
        let kt = self.gpu.upload_f32(&k, &bshape, "bn scale")?;
        self.tensors.push(kt);
        let ks = self.tensors.len() - 1;
        let st = self.gpu.upload_f32(&s, &bshape, "bn shift")?;
        self.tensors.push(st);
        let ss = self.tensors.len() - 1;
        let x = self.dev(&node.inputs[0], ctx)?;
        let mid = self.alloc(&xs, "bn scaled")?;
        let out_name = node.outputs[0].clone();
        let out = self.alloc(&xs, &out_name)?;
        self.steps.push(Step::Binary {
            op: BinaryOp::Mul,
            a: x,
            b: ks,
            out: mid,
            bounds: (0.0, 0.0),
        });
        self.steps.push(Step::Binary {
            op: BinaryOp::Add,
            a: mid,
            b: ss,
            out,
            bounds: (0.0, 0.0),
        });
        self.values.insert(out_name, Val::Dev(out));
        Ok(())
    }
}

/// An index map with its output shape.
struct IndexMap {
    shape: Vec<usize>,
    data: Vec<u32>,
}

/// Clip's bounds, known at plan time.
fn clip_bounds(ctx: &Ctx<'_>) -> Result<(f32, f32), EvalError> {
    if ctx.opset < 11 {
        return Ok((ctx.float("min", f32::MIN)?, ctx.float("max", f32::MAX)?));
    }
    let bound = |i: usize, default: f32| -> Result<f32, EvalError> {
        if ctx.node.inputs.get(i).is_none_or(String::is_empty) {
            return Ok(default);
        }
        match ctx.opt(i) {
            Some(t) if t.len() == 1 => Ok(t.data.to_f64()[0] as f32),
            Some(_) => Err(ctx.invalid(format!("input {i} must be one value"))),
            None => Err(ctx.unsupported("Clip bounds computed on the GPU")),
        }
    };
    Ok((bound(1, f32::MIN)?, bound(2, f32::MAX)?))
}

fn record(gpu: &Gpu, rec: &mut Recorder<'_>, t: &[Tensor], step: &Step) -> Result<(), GpuError> {
    match *step {
        Step::Conv {
            x,
            w,
            b,
            y,
            strides,
            dilations,
            pads,
            groups,
            act,
            scratch,
        } => ops::conv2d(
            gpu,
            rec,
            ops::Conv2d {
                x: &t[x],
                w: &t[w],
                bias: &t[b],
                y: &t[y],
                strides,
                dilations,
                pads,
                groups,
                act,
                scratch: scratch.map(|s| &t[s]),
            },
        ),
        Step::Binary {
            op,
            a,
            b,
            out,
            bounds,
        } => ops::broadcast(
            gpu,
            rec,
            ops::Broadcast {
                op,
                a: &t[a],
                b: &t[b],
                out: &t[out],
                bounds,
            },
        ),
        Step::Pool {
            x,
            y,
            max,
            include_pad,
            kernel,
            strides,
            dilations,
            pads_begin,
            pads_end,
        } => ops::pool2d(
            gpu,
            rec,
            ops::Pool2d {
                x: &t[x],
                y: &t[y],
                max,
                include_pad,
                kernel,
                strides,
                dilations,
                pads_begin,
                pads_end,
            },
        ),
        Step::Matmul {
            a,
            b,
            c,
            out,
            params,
        } => ops::matmul(
            gpu,
            rec,
            ops::Matmul {
                a: &t[a],
                b: &t[b],
                c: &t[c],
                out: &t[out],
                params,
            },
        ),
        Step::Softmax { x, y, dims } => ops::softmax_axis(gpu, rec, &t[x], &t[y], dims),
        Step::Gather {
            src,
            map,
            out,
            fill,
        } => ops::index_copy(gpu, rec, &t[src], &t[map], &t[out], false, fill),
        Step::Scatter { src, map, out } => {
            ops::index_copy(gpu, rec, &t[src], &t[map], &t[out], true, 0.0)
        }
    }
}
