//! `gpuport can-run MODEL`: what loading would take on this adapter, with blockers and
//! warnings, before anything is uploaded.

use std::path::Path;

use gpuport_llm::{Model, ModelConfig};
use gpuport_runtime::gguf::{GgmlType, Gguf};
use gpuport_runtime::{Gpu, GpuOptions};
use serde_json::json;

use crate::llm;
use crate::{EXIT_INVALID, EXIT_OK, EXIT_USAGE};

/// Runs `gpuport can-run` for a KV cache of `ctx` positions of `kv` values (the defaults where
/// `None`).
pub fn run(model: &Path, (ctx, kv): (Option<usize>, Option<GgmlType>), as_json: bool) -> u8 {
    let source = match llm::resolve(model) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error [{}]: {e}", e.code());
            return EXIT_USAGE;
        }
    };
    let checked = (|| -> Result<_, gpuport_llm::LlmError> {
        let gpu = Gpu::new(&GpuOptions::default())?;
        let g = Gguf::open(&source.gguf)?;
        let cfg = ModelConfig::from_gguf(&g)?;
        let context = llm::context_for(&cfg, ctx, source.context);
        let kv = match kv {
            Some(kv) => kv,
            None => gpuport_llm::kv_cache::default_kv_type(&gpu)?,
        };
        let plan = Model::plan(&gpu, &g, &cfg, (context, kv));
        Ok((gpu.info().name.clone(), cfg, (context, kv), plan))
    })();
    let (adapter, cfg, (context, kv), plan) = match checked {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error [{}]: {e}", e.code());
            return EXIT_INVALID;
        }
    };
    if as_json {
        let doc = json!({
            "model": source.gguf,
            "adapter": adapter,
            "architecture": cfg.arch.name(),
            "context": context,
            "weight_bytes": plan.weight_bytes,
            "kv_cache_bytes": plan.kv_bytes,
            "kv_cache_type": kv.name(),
            "largest_tensor_bytes": plan.largest_tensor,
            "can_run": plan.blockers.is_empty(),
            "blockers": plan.blockers,
            "warnings": plan.warnings,
        });
        println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
    } else {
        println!("model        {}", source.gguf.display());
        println!("adapter      {adapter}");
        println!(
            "needs        {:.1} MB weights + {:.1} MB KV cache ({context} positions of {})",
            plan.weight_bytes as f64 / 1e6,
            plan.kv_bytes as f64 / 1e6,
            kv.name()
        );
        for b in &plan.blockers {
            println!("blocker      {b}");
        }
        for w in &plan.warnings {
            println!("warning      {w}");
        }
        println!(
            "verdict      {}",
            if plan.blockers.is_empty() {
                "can run"
            } else {
                "cannot run"
            }
        );
    }
    if plan.blockers.is_empty() {
        EXIT_OK
    } else {
        EXIT_INVALID
    }
}
