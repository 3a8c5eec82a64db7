//! Ranking models for this adapter (the seed engine's `recommendModels` / `estimateSpeed`):
//! a can-run verdict with blockers and warnings, the bytes a model needs, and its decode speed —
//! projected from weight bytes and the streaming ceiling measured on this adapter (decode reads
//! every weight once per token, so `ceiling / weight bytes` bounds it), or the figure measured
//! here once the model has decoded on this adapter ([`SpeedRecord`]).
//!
//! GPU-free: the caller supplies the adapter's limits, the ceiling and each candidate's sizes
//! (exact from a local GGUF's load plan, or the manifest's file size before download).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Decode below this is not interactive: such models rank after every faster one that runs.
pub const INTERACTIVE_TOKENS_PER_S: f64 = 5.0;

/// One model to rank.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// Its id (catalog name or store id).
    pub id: String,
    /// Weight bytes (the GGUF's tensors, or the variant file's size before download).
    pub weight_bytes: u64,
    /// KV cache bytes at the planned context, when known (a local GGUF).
    pub kv_bytes: Option<u64>,
    /// Blockers already found (a local GGUF's load plan).
    pub blockers: Vec<String>,
    /// Warnings already found.
    pub warnings: Vec<String>,
    /// Its key in the [`SpeedRecord`].
    pub speed_key: String,
}

/// What the ranking knows of the device.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DeviceBudget {
    /// Memory the models may use, when known (`--max-vram-mb`).
    pub max_bytes: Option<u64>,
    /// The streaming-read ceiling measured on this adapter, GB/s.
    pub ceiling_gbps: f64,
}

/// One ranked model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recommendation {
    /// Its id.
    pub id: String,
    /// No blocker.
    pub can_run: bool,
    /// Why it cannot run.
    pub blockers: Vec<String>,
    /// What may go wrong.
    pub warnings: Vec<String>,
    /// Bytes it needs (weights + KV cache when known).
    pub bytes: u64,
    /// Decode tokens per second, measured here or projected.
    pub decode_tokens_per_s: f64,
    /// `measured` or `projected`.
    pub speed: &'static str,
}

/// Ranks `candidates`: runnable first, then interactive ones (≥ [`INTERACTIVE_TOKENS_PER_S`]);
/// among interactive models the larger (more capable) first, among the rest the faster first.
pub fn rank(
    candidates: &[Candidate],
    device: DeviceBudget,
    measured: &SpeedRecord,
    adapter_key: &str,
) -> Vec<Recommendation> {
    let mut out: Vec<Recommendation> = candidates
        .iter()
        .map(|c| {
            let bytes = c.weight_bytes + c.kv_bytes.unwrap_or(0);
            let mut blockers = c.blockers.clone();
            let mut warnings = c.warnings.clone();
            if let Some(max) = device.max_bytes
                && bytes > max
            {
                blockers.push(format!(
                    "needs {:.0} MB, the budget is {:.0} MB",
                    bytes as f64 / 1e6,
                    max as f64 / 1e6
                ));
            }
            if c.kv_bytes.is_none() {
                warnings
                    .push("not downloaded: sizes from the manifest, KV cache not counted".into());
            }
            let (speed, tps) = match measured.get(adapter_key, &c.speed_key) {
                Some(tps) => ("measured", tps),
                None => (
                    "projected",
                    device.ceiling_gbps * 1e9 / c.weight_bytes.max(1) as f64,
                ),
            };
            Recommendation {
                id: c.id.clone(),
                can_run: blockers.is_empty(),
                blockers,
                warnings,
                bytes,
                decode_tokens_per_s: tps,
                speed,
            }
        })
        .collect();
    out.sort_by(|a, b| {
        let fast = |r: &Recommendation| r.decode_tokens_per_s >= INTERACTIVE_TOKENS_PER_S;
        let speed = b.decode_tokens_per_s.total_cmp(&a.decode_tokens_per_s);
        let within = if fast(a) && fast(b) {
            b.bytes.cmp(&a.bytes).then(speed)
        } else {
            speed.then(b.bytes.cmp(&a.bytes))
        };
        b.can_run
            .cmp(&a.can_run)
            .then(fast(b).cmp(&fast(a)))
            .then(within)
            .then(a.id.cmp(&b.id))
    });
    out
}

/// The key a model's speed is recorded under: its GGUF's size in bytes, which the catalog
/// manifest, the store and a bare file all know without hashing.
pub fn speed_key(gguf_bytes: u64) -> String {
    format!("gguf-bytes:{gguf_bytes}")
}

/// The key of an adapter: PCI vendor, device and driver, as the tuning table keys it.
pub fn adapter_key(info: &wgpu::AdapterInfo) -> String {
    format!("{:04x}:{:04x}:{}", info.vendor, info.device, info.driver)
}

/// Decode speeds measured on this machine: adapter → model → tokens per second (the latest
/// measurement). Kept in `$XDG_CACHE_HOME/gpuport/decode-speeds.json`; a missing or unreadable
/// file is an empty record (it is a cache: losing it costs one projection).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SpeedRecord {
    /// Adapter key → model key → tokens per second.
    pub adapters: BTreeMap<String, BTreeMap<String, f64>>,
}

impl SpeedRecord {
    /// The default file: `$GPUPORT_SPEEDS`, else `$XDG_CACHE_HOME/gpuport/decode-speeds.json`
    /// (`~/.cache` when unset).
    pub fn default_path() -> Option<PathBuf> {
        if let Some(p) = std::env::var_os("GPUPORT_SPEEDS") {
            return Some(PathBuf::from(p));
        }
        let base = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
        Some(base.join("gpuport/decode-speeds.json"))
    }

    /// Reads `path` (empty when absent or unreadable).
    pub fn load(path: &Path) -> SpeedRecord {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default()
    }

    /// The speed measured for `model` on `adapter`.
    pub fn get(&self, adapter: &str, model: &str) -> Option<f64> {
        self.adapters
            .get(adapter)?
            .get(model)
            .copied()
            .filter(|t| t.is_finite() && *t > 0.0)
    }

    /// Records a measurement and writes the file (temp file and rename, so a reader never
    /// sees half of it).
    pub fn record(
        path: &Path,
        adapter: &str,
        model: &str,
        tokens_per_s: f64,
    ) -> std::io::Result<()> {
        let mut all = Self::load(path);
        all.adapters
            .entry(adapter.to_owned())
            .or_default()
            .insert(model.to_owned(), tokens_per_s);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
        std::fs::write(&tmp, serde_json::to_vec_pretty(&all).unwrap_or_default())?;
        std::fs::rename(&tmp, path)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn candidate(id: &str, bytes: u64, kv: Option<u64>) -> Candidate {
        Candidate {
            id: id.into(),
            weight_bytes: bytes,
            kv_bytes: kv,
            blockers: Vec::new(),
            warnings: Vec::new(),
            speed_key: speed_key(bytes),
        }
    }

    #[test]
    fn runnable_interactive_larger_first_and_measured_speeds_win() {
        let cands = [
            candidate("small", 100_000_000, Some(10_000_000)),
            candidate("big", 5_000_000_000, None),
            candidate("mid", 500_000_000, Some(20_000_000)),
            candidate("huge", 50_000_000_000, None),
        ];
        let device = DeviceBudget {
            max_bytes: Some(8_000_000_000),
            ceiling_gbps: 1.2,
        };
        let mut measured = SpeedRecord::default();
        let r = rank(&cands, device, &measured, "a");
        let ids: Vec<&str> = r.iter().map(|r| r.id.as_str()).collect();
        // 1.2 GB/s: small 12 tok/s, mid 2.4, big 0.24 (not interactive), huge blocked.
        assert_eq!(ids, ["small", "mid", "big", "huge"]);
        assert!(!r[3].can_run && r[3].blockers[0].contains("budget"));
        assert!(r[2].warnings[0].contains("not downloaded"));
        assert!((r[0].decode_tokens_per_s - 12.0).abs() < 1e-9);
        assert_eq!(r[0].speed, "projected");
        // A measurement here replaces the projection: mid measured at 6 tok/s is interactive
        // and larger than small.
        measured
            .adapters
            .entry("a".into())
            .or_default()
            .insert(speed_key(500_000_000), 6.0);
        let r = rank(&cands, device, &measured, "a");
        assert_eq!(r[0].id, "mid");
        assert_eq!(r[0].speed, "measured");
        // Another adapter's measurement does not count.
        assert_eq!(rank(&cands, device, &measured, "b")[0].id, "small");
    }

    #[test]
    fn the_record_round_trips_through_its_file() {
        let dir = std::env::temp_dir().join(format!("gpuport-speeds-{}", std::process::id()));
        let path = dir.join("speeds.json");
        SpeedRecord::record(&path, "a", "m", 9.5).unwrap();
        SpeedRecord::record(&path, "a", "n", 3.0).unwrap();
        let r = SpeedRecord::load(&path);
        assert_eq!(r.get("a", "m"), Some(9.5));
        assert_eq!(r.get("a", "n"), Some(3.0));
        assert_eq!(r.get("b", "m"), None);
        std::fs::write(&path, "not json").unwrap();
        assert_eq!(SpeedRecord::load(&path), SpeedRecord::default());
        let _ = std::fs::remove_dir_all(dir);
    }
}
