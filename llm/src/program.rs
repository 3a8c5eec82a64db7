//! The MLC `token_generation` roles over a loaded GGUF model (mlc-model-package-v1, "the
//! compiled half names entrypoints by role"): `embed_tokens`, `prefill_embeds`,
//! `decode_embeds` and `create_kv_cache`. llama and gemma3 read token ids only through the
//! embedding, so they declare the embeddings pair (the token pair is for models that look ids
//! up in every layer); an adapter's rows (image, audio) go to `prefill_embeds` in place of
//! token embeddings. The roles run the same layer code as [`super::Session`]: a prompt's
//! embeddings through batched prefill, one position per decode step, the KV cache paged.
//!
//! ```no_run
//! # use gpuport_runtime::{Gpu, GpuOptions, gguf::Gguf};
//! # use gpuport_llm::{Model, Program};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let gpu = Gpu::new(&GpuOptions::default())?;
//! let gguf = Gguf::open("models/SmolLM2-135M-Instruct.Q4_1.gguf".as_ref())?;
//! let model = Model::load(&gpu, &gguf, 512)?;
//! let mut program = Program::new(&gpu, &model, 512)?;
//! let mut kv = program.create_kv_cache(512)?;
//! let embeddings = program.embed_tokens(&[1, 2, 3])?;
//! let logits = program.prefill_embeds(&embeddings, &mut kv)?;
//! let next = gpu.readback_f32(&logits)?;
//! # Ok(()) }
//! ```

use std::collections::BTreeMap;

use gpuport_manifest_core::hash::{ParamSchema, interface_id, parameter_schema_id};
use gpuport_manifest_core::mlc::PROGRAM_SCHEMA;
use gpuport_runtime::gguf::{Gguf, Metadata, TensorInfo};
use serde_json::{Value, json};

use super::arch::ModelConfig;
use super::error::LlmError;
use super::kv_cache::{DEFAULT_PAGE, KvCache};
use super::model::{Model, Rows, Scratch};
use super::prefill::BatchScratch;
use gpuport_runtime::device::Gpu;
use gpuport_runtime::recorder::Recorder;
use gpuport_runtime::tensor::{Elem, Tensor};

/// The roles this executor declares and the entry point of each, as a compiled program's
/// `exports` name them (`gpuport inspect MODEL.gguf --program`).
pub const EXPORTS: [(&str, &str); 4] = [
    ("embed_tokens", "embed_tokens"),
    ("prefill_embeds", "prefill_embeds"),
    ("decode_embeds", "decode_embeds"),
    ("create_kv_cache", "create_paged_kv_cache"),
];

/// The roles of one model, with the activations they share. One call at a time; the logits
/// a prefill or decode returns stay valid until the next one.
pub struct Program<'m> {
    gpu: &'m Gpu,
    model: &'m Model,
    scratch: Scratch,
    batch: Option<BatchScratch>,
    capacity: usize,
    /// Prompts in batches (`Some(true)`), token by token (`Some(false)`), or as suits the
    /// adapter (`None`: [`super::prefill::batched_prefill_default`]).
    pub batched_prefill: Option<bool>,
}

impl<'m> Program<'m> {
    /// The roles of `model` for KV caches of up to `capacity` positions.
    pub fn new(gpu: &'m Gpu, model: &'m Model, capacity: usize) -> Result<Program<'m>, LlmError> {
        if capacity == 0 {
            return Err(LlmError::Request("a capacity of 0 positions".into()));
        }
        Ok(Program {
            gpu,
            model,
            scratch: Scratch::new(gpu, &model.cfg, capacity)?,
            batch: None,
            capacity,
            batched_prefill: None,
        })
    }

    /// `embed_tokens`: the embeddings of `ids`, `[ids.len(), hidden]` f32 on the GPU, scaled
    /// as the architecture does (Gemma: `sqrt(hidden)`), ready for [`Program::prefill_embeds`].
    pub fn embed_tokens(&self, ids: &[u32]) -> Result<Tensor, LlmError> {
        let c = &self.model.cfg;
        if let Some(bad) = ids.iter().find(|t| **t as usize >= c.vocab) {
            return Err(LlmError::Request(format!(
                "token id {bad} is outside the vocabulary of {}",
                c.vocab
            )));
        }
        if ids.is_empty() {
            return Err(LlmError::Request("no token ids to embed".into()));
        }
        let idt = self.gpu.upload(
            bytemuck::cast_slice(ids),
            Elem::U32,
            &[ids.len()],
            "token ids",
        )?;
        let out = self.gpu.zeros_f32(&[ids.len(), c.embd], "embeddings")?;
        let mut rec = Recorder::new(self.gpu);
        self.model
            .first_rows(self.gpu, &mut rec, Rows::Ids(&idt), 0, &out)?;
        rec.submit()?;
        Ok(out)
    }

    /// `create_kv_cache`: an empty paged cache of `capacity` positions (at most the
    /// program's).
    pub fn create_kv_cache(&self, capacity: usize) -> Result<KvCache, LlmError> {
        if capacity > self.capacity {
            return Err(LlmError::Request(format!(
                "a KV cache of {capacity} positions from a program made for {}",
                self.capacity
            )));
        }
        Ok(KvCache::new(
            self.gpu,
            &self.model.cfg,
            capacity,
            (DEFAULT_PAGE, self.model.kv_type()),
        )?)
    }

    /// `prefill_embeds`: runs the rows of `embeddings` (`[n, hidden]` or `[1, n, hidden]`
    /// f32) at the cache's next positions and returns the logits after the last (`[vocab]`
    /// f32 on the GPU).
    pub fn prefill_embeds(
        &mut self,
        embeddings: &Tensor,
        kv: &mut KvCache,
    ) -> Result<Tensor, LlmError> {
        let n = self.rows_of(embeddings)?;
        if n == 0 {
            return Err(LlmError::Request("no embeddings to prefill".into()));
        }
        self.check_fits(kv, n)?;
        let (gpu, model, batched) = (self.gpu, self.model, self.batched_prefill);
        let (scratch, batch) = (&self.scratch, &mut self.batch);
        Self::run(gpu, kv, n, |rec, kv, start| {
            let rows = Rows::Embeds(embeddings);
            model.record_prompt(gpu, rec, rows, (scratch, batch, batched), kv, start, n)
        })?;
        Ok(self.scratch.logits.clone())
    }

    /// `decode_embeds`: runs one row (`[1, hidden]` or `[1, 1, hidden]`) at the cache's next
    /// position and returns the logits after it.
    pub fn decode_embeds(
        &mut self,
        embedding: &Tensor,
        kv: &mut KvCache,
    ) -> Result<Tensor, LlmError> {
        if self.rows_of(embedding)? != 1 {
            return Err(LlmError::Request(format!(
                "decode_embeds takes one row, not {:?}",
                embedding.shape
            )));
        }
        self.check_fits(kv, 1)?;
        let (gpu, model, scratch) = (self.gpu, self.model, &self.scratch);
        Self::run(gpu, kv, 1, |rec, kv, start| {
            let rows = Rows::Embeds(embedding);
            model.record_token(gpu, rec, scratch, rows, &kv.seq_kv(), start, true)
        })?;
        Ok(self.scratch.logits.clone())
    }

    /// Backs `n` more positions of `kv`, records them with `record` (given the first) and
    /// submits; on any failure the cache is left as it was.
    fn run(
        gpu: &Gpu,
        kv: &mut KvCache,
        n: usize,
        record: impl FnOnce(
            &mut Recorder<'_>,
            &KvCache,
            usize,
        ) -> Result<(), gpuport_runtime::error::GpuError>,
    ) -> Result<(), LlmError> {
        let start = kv.len();
        kv.extend(gpu, n)?;
        let mut rec = Recorder::new(gpu);
        let done = record(&mut rec, kv, start).and_then(|()| rec.submit());
        if done.is_err() {
            kv.truncate(start);
        }
        Ok(done?)
    }

    /// Rows of an embeddings tensor: f32, `[.., n, hidden]` with leading dimensions of 1.
    fn rows_of(&self, t: &Tensor) -> Result<usize, LlmError> {
        let hidden = self.model.cfg.embd;
        let (rows, lead) = match t.shape.as_slice() {
            [lead @ .., n, h] if *h == hidden => (*n, lead),
            _ => (0, &[0usize][..]),
        };
        let elems: usize = t.shape.iter().product();
        if t.elem != Elem::F32 || lead.iter().any(|d| *d != 1) || elems * 4 != t.bytes as usize {
            return Err(LlmError::Request(format!(
                "embeddings of shape {:?} ({:?}); expected f32 [n, {hidden}] or [1, n, {hidden}]",
                t.shape, t.elem
            )));
        }
        Ok(rows)
    }

    /// Whether `n` more positions fit `kv`, which must be one this program can run.
    fn check_fits(&self, kv: &KvCache, n: usize) -> Result<(), LlmError> {
        if !kv.fits(&self.model.cfg) {
            return Err(LlmError::Request(
                "a KV cache made for another model (layers or KV width differ)".into(),
            ));
        }
        if kv.capacity() > self.capacity {
            return Err(LlmError::Request(format!(
                "a KV cache of {} positions on a program made for {}",
                kv.capacity(),
                self.capacity
            )));
        }
        if kv.len() + n > kv.capacity() {
            return Err(LlmError::Request(format!(
                "{n} more positions after {} in a KV cache of {}",
                kv.len(),
                kv.capacity()
            )));
        }
        Ok(())
    }
}

/// The tasks object a GGUF implies (what `interface_id` hashes): `chat.completions` when it
/// carries a chat template, else `text.completions`, run by the `generation` executor, text in
/// (the tokenizer) and text out.
pub fn tasks(g: &Gguf) -> Value {
    let task = if g.value("tokenizer.chat_template").is_some() {
        "chat.completions"
    } else {
        "text.completions"
    };
    json!({
        task: {
            "executor": "generation",
            "inputs": {"text": {"processor": "tokenizer"}},
            "output": "text"
        }
    })
}

fn params(parameters: &[&TensorInfo]) -> Vec<ParamSchema> {
    parameters
        .iter()
        .map(|t| ParamSchema {
            name: t.name.clone(),
            shape: t.dims.iter().rev().copied().collect(),
            dtype: t.type_name(),
        })
        .collect()
}

/// The `mlc.compiled-program` document this executor satisfies for `g` (mlc-model-package-v1):
///
/// - `interface_id`: the canonical id of the tasks the file implies ([`tasks`]);
/// - `parameter_schema_id`: the canonical id of the parameters the forward pass reads, each
///   `{name, shape (outermost first), dtype}` with the GGML type name as the dtype (a GGUF
///   stores blocks, not MLC's element dtypes; docs/spec/hashes.md);
/// - `programs.generation.exports`: the roles of [`EXPORTS`];
/// - `resources`: from the parameter shapes — the largest parameter and their total, the
///   figures `gpuport can-run` reports as `largest_tensor_bytes` and `weight_bytes`; no
///   WebGPU feature is required (the kernels read f16 through `unpack2x16float`, subgroups
///   are optional).
pub fn document(g: &Gguf, cfg: &ModelConfig) -> Result<Value, String> {
    let parameters = super::weights::parameters(cfg, g);
    let interface = interface_id(&tasks(g)).map_err(|e| e.to_string())?;
    let schema = parameter_schema_id(&params(&parameters)).map_err(|e| e.to_string())?;
    let exports: BTreeMap<&str, &str> = EXPORTS.into_iter().collect();
    let largest = parameters.iter().map(|t| t.bytes).max().unwrap_or(0);
    let total: u64 = parameters.iter().map(|t| t.bytes).sum();
    Ok(json!({
        "schema": PROGRAM_SCHEMA,
        "schema_version": 1,
        "interface_id": interface,
        "parameter_schema_id": schema,
        "programs": {
            "generation": {"kind": "token_generation", "exports": exports}
        },
        "resources": {
            "required_features": [],
            "max_storage_buffer_binding_size": largest,
            "estimated_device_memory_bytes": total
        }
    }))
}
