//! # gpuport-kernels
//!
//! WGSL compute kernels as data: one WGSL file per family (`src/wgsl/`), its tunables as
//! `override` constants, a Rust descriptor ([`KernelSpec`]) per variant, the uniform structs
//! (bytemuck), and a CPU reference for each. Every variant is validated with naga and translated
//! to SPIR-V and MSL in this crate's tests; the `runtime` crate compares GPU output with the
//! references on a real adapter.
//!
//! ```
//! use gpuport_kernels::{gemv, quant::GgmlType};
//!
//! let t = gemv::GemvTunables::default_for(false);
//! let spec = gemv::spec(GgmlType::Q4K, t);
//! assert_eq!(spec.label(), "gemv.q4_K.shared.WG=128.ROWS=8.RPT=2");
//! assert!(spec.wgsl().contains("fn step_dot"));
//! ```

pub mod attention;
pub mod dequant;
pub mod gemm;
pub mod gemv;
pub mod kernel;
pub mod quant;
pub mod rowops;
pub mod sample;
pub mod source;
pub mod stream;
pub mod validate;
pub mod vision;

pub use kernel::{Family, KernelSpec};
pub use source::Reduction;

/// A 1D count of workgroups laid out as a 2D grid `(x, y)` with `x <= max_per_dim`; kernels
/// recover the linear index as `wg.x + wg.y * grid_x`.
pub fn grid_2d(groups: u32, max_per_dim: u32) -> (u32, u32) {
    if groups <= max_per_dim {
        (groups.max(1), 1)
    } else {
        let y = groups.div_ceil(max_per_dim);
        (groups.div_ceil(y), y)
    }
}

/// Every kernel variant this crate defines, for validation and benchmarking.
pub fn all_specs() -> Vec<KernelSpec> {
    let mut out = Vec::new();
    for ty in quant::GgmlType::ALL {
        out.extend(
            gemv::GemvTunables::all()
                .into_iter()
                .map(|t| gemv::spec(ty, t)),
        );
        // The fused input forms at the default tunables of both reductions, and GeGLU too
        // wide to stage.
        for input in gemv::GemvInput::ALL {
            let staged = gemv::STAGED_MAX_COLS as usize;
            let mut widths = vec![staged];
            if input == gemv::GemvInput::GeGlu {
                widths.push(2 * staged);
            }
            for cols in widths {
                out.extend([false, true].map(|sg| {
                    gemv::spec_with(ty, gemv::GemvTunables::default_for(sg), input, cols)
                }));
            }
        }
        for input in [gemv::GemvInput::Plain, gemv::GemvInput::RmsNormPlusOne] {
            out.extend([false, true].map(|sg| {
                let t = gemv::GemvTunables::default_for(sg);
                gemv::input_only_spec(ty, t, input, 640, true)
            }));
        }
        if gemv::takes_q8_input(ty) {
            for t in gemv::GemvTunables::all()
                .into_iter()
                .filter(|t| t.rpt <= gemv::Q8_MAX_RPT)
            {
                out.push(gemv::spec_with(ty, t, gemv::GemvInput::Q8Blocks, 0));
            }
        }
        for tile in gemm::GemmTile::all() {
            out.extend(gemm::INPUTS.map(|input| gemm::spec(ty, tile, input)));
        }
        out.extend(gemm::rows_specs(ty));
        if gemv::takes_q8_input(ty) {
            out.extend(gemm::rows_q8_specs(ty));
            out.extend(gemm::tiles_q8_specs(ty));
        }
        out.extend(gemm::coop_specs(ty));
        out.extend(dequant::WG_VALUES.map(|wg| dequant::spec(ty, wg)));
        out.extend(dequant::WG_VALUES.map(|wg| dequant::embed_spec(ty, wg)));
    }
    out.extend([false, true].map(gemm::splits_spec));
    for kv in attention::KV_TYPES {
        out.extend(attention::TILE_HEAD_DIMS.map(|hd| attention::coop_tiles_spec(hd, kv)));
    }
    for input in gemm::X16_INPUTS {
        let most = if input.is_row_norm() {
            gemm::X16_NORM_TOKENS_MAX
        } else {
            1
        };
        for nt in 1..=most {
            out.extend([false, true].map(|v4| gemm::x16_spec(input, v4, nt)));
            out.extend(gemm::x16_split_spec(input, nt));
        }
    }
    out.extend(stream::WG_VALUES.map(stream::spec));
    out.extend(rowops::all_specs());
    out.extend(vision::all_specs());
    out.extend(sample::Stage::ALL.map(sample::spec));
    for wg in attention::WG_VALUES {
        for blocks in [false, true] {
            out.extend(Reduction::ALL.map(|r| attention::combine_spec(wg, r, blocks)));
        }
    }
    for kv in attention::KV_TYPES {
        for wg in attention::WG_VALUES {
            for kb in attention::KB_VALUES.into_iter().filter(|kb| wg % kb == 0) {
                for neox in [false, true] {
                    out.extend(Reduction::ALL.map(|r| attention::decode_spec(wg, kb, r, neox, kv)));
                }
            }
            for neox in [false, true] {
                out.extend(Reduction::ALL.map(|r| attention::prep_spec(wg, r, neox, kv)));
            }
        }
        // The per-row causal pass at the head dims of the layouts served, at 48 and 16 KiB of
        // workgroup memory, for prompts and for row tables, at the GQA groups of Llama and
        // Gemma 3 (4), SmolLM2 (3), Qwen2.5 0.5B (7), no sharing (1) and the most that fit.
        for hd in [64, 80, 128, 256] {
            for limit in [48 << 10, 16 << 10] {
                let keys = [
                    attention::row_keys(hd, limit),
                    attention::row_table_keys(hd, limit),
                ];
                for kb in keys.into_iter().flatten() {
                    for heads in [1, 3, 4, 7, 16] {
                        let spec = attention::row_group(heads, 1, hd, kb)
                            .map(|g| attention::prefill_spec(hd, kb, g, kv));
                        if let Some(spec) = spec.filter(|s| !out.contains(s)) {
                            out.push(spec);
                        }
                    }
                }
            }
            // The subgroup row pass at GQA groups of 4 (Llama, Gemma 3) and 3 (SmolLM2), on 8-
            // and 32-lane subgroups.
            for (group, width) in [(4, 8), (4, 32), (3, 32)] {
                if let Some((g, nc)) = attention::rows_sg_shape(group, 1, hd, width) {
                    out.push(attention::rows_sg_spec(hd, g, nc, kv));
                }
            }
        }
        for hd in attention::TILE_HEAD_DIMS {
            for k in attention::TILE_KEYS {
                if attention::tiles_variant(hd, k) {
                    out.push(attention::tiles_spec(hd, k, kv));
                }
            }
        }
    }
    out
}
