//! The tuning table: which kernel variant to run on which adapter. `cargo xtask bench
//! --write-table` measures and writes it; the committed default ships in the binary, a user file
//! (`GPUPORT_TUNING`, else `$XDG_CONFIG_HOME/gpuport/tuning.json`) overrides it per adapter, and
//! an adapter with no entry uses a heuristic default.

use std::collections::BTreeMap;

use gpuport_kernels::Reduction;
use gpuport_kernels::gemm::GemmTile;
use gpuport_kernels::gemv::GemvTunables;
use gpuport_kernels::quant::GgmlType;
use serde::{Deserialize, Serialize};

/// One adapter's chosen tunables.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdapterTuning {
    /// PCI vendor id.
    pub vendor: u32,
    /// PCI device id.
    pub device: u32,
    /// Driver name as wgpu reports it.
    pub driver: String,
    /// Adapter name (informational).
    pub name: String,
    /// `gemv.<quant>` → tunables.
    pub gemv: BTreeMap<String, TunedGemv>,
    /// `gemm.<quant>` → the prefill GEMM's tile.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub gemm: BTreeMap<String, TunedGemm>,
}

/// A GEMM tile as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TunedGemm {
    /// Tokens per tile.
    pub tm: u32,
    /// Weight rows per tile.
    pub tn: u32,
}

/// The key of a GEMM entry.
pub fn gemm_key(ty: GgmlType) -> String {
    format!("gemm.{}", ty.name())
}

/// GEMV tunables as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TunedGemv {
    /// Threads per workgroup.
    pub wg: u32,
    /// Rows per workgroup.
    pub rows: u32,
    /// Rows per thread.
    #[serde(default = "one")]
    pub rpt: u32,
    /// `subgroup` or `shared`.
    pub reduction: String,
    /// Steps per loop iteration.
    #[serde(default = "one")]
    pub unroll: u32,
}

/// The whole table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TuningTable {
    /// What the file is.
    #[serde(default)]
    pub about: String,
    /// Entries, one per adapter.
    pub adapters: Vec<AdapterTuning>,
}

impl TunedGemv {
    /// As kernel tunables (`None` if the stored reduction is unknown).
    pub fn tunables(&self) -> Option<GemvTunables> {
        let reduction = Reduction::ALL
            .into_iter()
            .find(|r| r.name() == self.reduction)?;
        Some(GemvTunables {
            wg: self.wg,
            rows: self.rows,
            rpt: self.rpt,
            reduction,
            unroll: self.unroll,
        })
    }
}

impl From<GemvTunables> for TunedGemv {
    fn from(t: GemvTunables) -> Self {
        TunedGemv {
            wg: t.wg,
            rows: t.rows,
            rpt: t.rpt,
            reduction: t.reduction.name().to_owned(),
            unroll: t.unroll,
        }
    }
}

fn one() -> u32 {
    1
}

/// The key of a GEMV entry.
pub fn gemv_key(ty: GgmlType) -> String {
    format!("gemv.{}", ty.name())
}

/// The key of an int8-input GEMV entry (`gemv_q8.wgsl`).
pub fn gemv_q8_key(ty: GgmlType) -> String {
    format!("gemv_q8.{}", ty.name())
}

/// What a device offers that decides whether a table entry can run on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceCaps {
    /// Subgroup operations are available.
    pub subgroups: bool,
    /// `max_compute_invocations_per_workgroup`.
    pub max_invocations: u32,
    /// `max_compute_workgroup_storage_size` in bytes.
    pub max_workgroup_bytes: u32,
}

impl TuningTable {
    /// Parses a table (the committed file or a user's).
    pub fn parse(text: &str) -> Result<TuningTable, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The GEMV tunables under `key` ([`gemv_key`], [`gemv_q8_key`]) for `info`, when the
    /// table has an entry the kernels define and `caps` can run. A user's file can name
    /// anything: only variants of [`GemvTunables::all`] pass (the int8 GEMV's with at most
    /// [`gpuport_kernels::gemv::Q8_MAX_RPT`] rows per thread), a subgroup reduction
    /// only with subgroups, a workgroup no larger than the device allows.
    pub fn gemv_variant(
        &self,
        info: &wgpu::AdapterInfo,
        key: &str,
        caps: DeviceCaps,
    ) -> Option<GemvTunables> {
        let q8 = key.starts_with("gemv_q8.");
        self.entry(info, key)
            .filter(|t| t.reduction == Reduction::Shared || caps.subgroups)
            .filter(|t| GemvTunables::all().contains(t))
            .filter(|t| !q8 || t.rpt <= gpuport_kernels::gemv::Q8_MAX_RPT)
            .filter(|t| t.wg <= caps.max_invocations)
    }

    /// The GEMM tile for weights of `ty` on `info` when the table has a valid one that fits
    /// the device's workgroup memory.
    pub fn gemm_variant(
        &self,
        info: &wgpu::AdapterInfo,
        ty: GgmlType,
        caps: DeviceCaps,
    ) -> Option<GemmTile> {
        self.gemm_tile(info, ty)
            .filter(|t| t.workgroup_bytes() <= caps.max_workgroup_bytes)
    }

    /// The table compiled into the binary.
    pub fn committed() -> TuningTable {
        Self::parse(include_str!("../tuning/default.json")).unwrap_or_default()
    }

    /// The committed table with the user's file (if any) laid over it.
    pub fn load() -> TuningTable {
        let mut table = Self::committed();
        let path = std::env::var_os("GPUPORT_TUNING")
            .map(std::path::PathBuf::from)
            .or_else(|| {
                let base = std::env::var_os("XDG_CONFIG_HOME")
                    .map(std::path::PathBuf::from)
                    .or_else(|| {
                        std::env::var_os("HOME")
                            .map(|h| std::path::PathBuf::from(h).join(".config"))
                    })?;
                Some(base.join("gpuport/tuning.json"))
            });
        if let Some(user) = path
            .and_then(|p| std::fs::read_to_string(p).ok())
            .and_then(|t| Self::parse(&t).ok())
        {
            for entry in user.adapters {
                table.upsert(entry);
            }
        }
        table
    }

    /// Adds or replaces the entry for an adapter.
    pub fn upsert(&mut self, entry: AdapterTuning) {
        self.adapters.retain(|a| {
            !(a.vendor == entry.vendor && a.device == entry.device && a.driver == entry.driver)
        });
        self.adapters.push(entry);
    }

    /// The tunables under `key` ([`gemv_key`], [`gemv_q8_key`]) on `info`, if the table has
    /// them.
    pub fn entry(&self, info: &wgpu::AdapterInfo, key: &str) -> Option<GemvTunables> {
        self.adapter(info)?.gemv.get(key)?.tunables()
    }

    /// The GEMM tile for weights of `ty` on `info`, if the table has one (a valid one).
    pub fn gemm_tile(&self, info: &wgpu::AdapterInfo, ty: GgmlType) -> Option<GemmTile> {
        let t = self.adapter(info)?.gemm.get(&gemm_key(ty))?;
        let tile = GemmTile { tm: t.tm, tn: t.tn };
        GemmTile::all().contains(&tile).then_some(tile)
    }

    fn adapter(&self, info: &wgpu::AdapterInfo) -> Option<&AdapterTuning> {
        self.adapters
            .iter()
            .find(|a| a.vendor == info.vendor && a.device == info.device && a.driver == info.driver)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The committed table parses (a bad file would silently fall back to defaults), and every
    /// entry names a variant the kernels have: GEMV tunables from `GemvTunables::all()` (the
    /// int8 GEMV's with at most `Q8_MAX_RPT` rows per thread), GEMM tiles from `GemmTile::all()`, keys of
    /// known types.
    #[test]
    fn committed_table_is_valid() {
        let table: TuningTable =
            serde_json::from_str(include_str!("../tuning/default.json")).unwrap();
        assert!(!table.adapters.is_empty());
        let all = GemvTunables::all();
        for a in &table.adapters {
            for (key, t) in &a.gemv {
                let known = GgmlType::ALL
                    .into_iter()
                    .any(|ty| *key == gemv_key(ty) || *key == gemv_q8_key(ty));
                assert!(known, "{}: {key}", a.name);
                let t = t.tunables().unwrap();
                assert!(all.contains(&t), "{}: {key} {t:?}", a.name);
                if key.starts_with("gemv_q8.") {
                    assert!(
                        t.rpt <= gpuport_kernels::gemv::Q8_MAX_RPT,
                        "{}: {key}",
                        a.name
                    );
                }
            }
            for (key, t) in &a.gemm {
                assert!(
                    GgmlType::ALL.into_iter().any(|ty| *key == gemm_key(ty)),
                    "{key}"
                );
                let tile = GemmTile { tm: t.tm, tn: t.tn };
                assert!(GemmTile::all().contains(&tile), "{}: {key}", a.name);
            }
        }
    }

    /// Every committed int8-GEMV entry applies to the 8192-column matrices it was swept on
    /// (`bench --shapes large`), and gives way to the kernel's default on rows with fewer than
    /// `Q8_TABLE_MIN_UNITS_PER_LANE` units a lane (the Llama-1B shape's 2048-column Q4_K
    /// matrices under the H100's 32 lanes a row).
    #[test]
    fn int8_gemv_entries_apply_to_long_rows_only() {
        use gpuport_kernels::gemm::q8_unit_cols;
        use gpuport_kernels::gemv::Q8_TABLE_MIN_UNITS_PER_LANE;
        let table = TuningTable::committed();
        let mut short_rows = 0;
        for a in &table.adapters {
            for ty in GgmlType::ALL {
                let Some(t) = a.gemv.get(&gemv_q8_key(ty)) else {
                    continue;
                };
                let t = t.tunables().unwrap();
                assert_eq!(t.q8_for_cols(ty, 8192, true), t, "{}: {ty:?}", a.name);
                let lanes = t.lanes_per_group() as usize;
                let cols = q8_unit_cols(ty) * (Q8_TABLE_MIN_UNITS_PER_LANE * lanes - 1);
                let default = GemvTunables::q8_default_for(ty, true);
                assert_eq!(t.q8_for_cols(ty, cols, true), default, "{}: {ty:?}", a.name);
                short_rows += usize::from(ty == GgmlType::Q4K && cols >= 2048);
            }
        }
        assert!(
            short_rows > 0,
            "no entry leaves a 2048-column Q4_K matrix to the default"
        );
    }
}
