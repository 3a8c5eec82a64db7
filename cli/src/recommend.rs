//! `gpuport recommend [--max-vram-mb N] [--json]`: the catalog's models ranked for this
//! adapter (the ranking itself is `gpuport_llm::recommend`): can-run verdict, bytes,
//! and decode speed — projected from the streaming ceiling measured now, or measured here by
//! an earlier `generate`.

use gpuport_llm::recommend::{Candidate, DeviceBudget, SpeedRecord, adapter_key, rank, speed_key};
use gpuport_llm::{Model, ModelConfig};
use gpuport_runtime::bench::stream_ceiling;
use gpuport_runtime::gguf::{GgmlType, Gguf};
use gpuport_runtime::{Gpu, GpuOptions};
use gpuport_store::{Catalog, Store, default_root};
use serde_json::{Value, json};

use crate::{EXIT_OK, EXIT_USAGE};

/// Largest buffer the ceiling is measured with: enough to stream past every cache.
const CEILING_BYTES: u64 = 256 << 20;

/// Runs `gpuport recommend`.
pub fn run(max_vram_mb: Option<u64>, as_json: bool) -> u8 {
    // The KV cache type the sizes are planned for (`GPUPORT_KV_TYPE` when set, else the
    // adapter's default once it is open).
    let kv = match gpuport_llm::kv_cache::env_kv_type() {
        Ok(kv) => kv,
        Err(e) => {
            eprintln!("error [{}]: {e}", e.code());
            return EXIT_USAGE;
        }
    };
    let catalog = match Catalog::load(&crate::store::catalog_paths(&[])) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    let gpu = match Gpu::new(&GpuOptions::default()) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("error [{}]: {e}", e.code());
            return crate::EXIT_INVALID;
        }
    };
    let kv = kv.unwrap_or_else(|| gpuport_llm::kv_cache::adapter_kv_type(&gpu));
    let ceiling = match stream_ceiling(&gpu, CEILING_BYTES, true) {
        Ok(c) => c.gbps,
        Err(e) => {
            eprintln!("error [{}]: {e}", e.code());
            return crate::EXIT_INVALID;
        }
    };
    let store = default_root(crate::store::store_dir())
        .ok()
        .and_then(|root| Store::open(root).ok());
    let candidates: Vec<Candidate> = catalog
        .entries()
        .filter_map(|(name, entry)| candidate(&gpu, (store.as_ref(), kv), name, &entry.manifest))
        .collect();
    let speeds = SpeedRecord::default_path()
        .map(|p| SpeedRecord::load(&p))
        .unwrap_or_default();
    let device = DeviceBudget {
        max_bytes: max_vram_mb.map(|mb| mb << 20),
        ceiling_gbps: ceiling,
    };
    let ranked = rank(&candidates, device, &speeds, &adapter_key(gpu.info()));
    if as_json {
        let doc = json!({
            "adapter": gpu.info().name,
            "streaming_read_gbps": ceiling,
            "models": ranked,
        });
        println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
        return EXIT_OK;
    }
    println!(
        "adapter {} · streaming read {ceiling:.1} GB/s",
        gpu.info().name
    );
    for r in &ranked {
        println!(
            "{:<32} {:<10} {:>9.1} MB {:>9.1} tok/s ({})",
            r.id,
            if r.can_run { "can run" } else { "cannot run" },
            r.bytes as f64 / 1e6,
            r.decode_tokens_per_s,
            r.speed
        );
        for b in &r.blockers {
            println!("    blocker  {b}");
        }
        for w in &r.warnings {
            println!("    warning  {w}");
        }
    }
    EXIT_OK
}

/// A catalog entry's text-generation variant as a candidate: exact sizes and blockers from
/// the GGUF when the store holds it (its KV cache planned for `kv` values), else the manifest's
/// file size.
fn candidate(
    gpu: &Gpu,
    (store, kv): (Option<&Store>, GgmlType),
    name: &str,
    manifest: &Value,
) -> Option<Candidate> {
    if manifest["task"] != "text-generation" {
        return None;
    }
    let variant = manifest["variants"]
        .as_array()?
        .iter()
        .find(|v| v["runtime"] == "llamacpp")?;
    let size = variant["file"]["size"].as_u64()?;
    let path = variant["file"]["path"].as_str()?;
    let mut c = Candidate {
        id: name.to_owned(),
        weight_bytes: size,
        kv_bytes: None,
        blockers: Vec::new(),
        warnings: Vec::new(),
        speed_key: speed_key(size),
    };
    let local = store
        .and_then(|s| s.resolve_present(name).ok())
        .and_then(|m| m.files.get(path).cloned());
    if let Some(gguf) = local
        && let Ok(g) = Gguf::open(&gguf)
        && let Ok(cfg) = ModelConfig::from_gguf(&g)
    {
        let wanted = manifest["llm"]["context_length"]
            .as_u64()
            .map(|c| c as usize);
        let context = crate::llm::context_for(&cfg, None, wanted);
        let plan = Model::plan(gpu, &g, &cfg, (context, kv));
        c.weight_bytes = plan.weight_bytes;
        c.kv_bytes = Some(plan.kv_bytes);
        c.blockers = plan.blockers;
        c.warnings = plan.warnings;
    }
    Some(c)
}
