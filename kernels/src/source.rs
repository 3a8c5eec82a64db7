//! WGSL assembly: a family file plus the snippets it names with `//!include`. This is the one
//! place variants are produced from text (ggml-vulkan does the same with defines); every knob
//! that can be an `override` constant is one, and only what WGSL cannot switch at pipeline
//! creation — the quantization type's decoder and whether subgroup operations appear at all —
//! is chosen here.

use crate::quant::GgmlType;

/// How the partial sums of a row are reduced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reduction {
    /// Workgroup memory tree: works everywhere.
    Shared,
    /// Subgroup shuffles and one barrier: needs the SUBGROUP feature.
    Subgroup,
}

impl Reduction {
    /// Both reductions.
    pub const ALL: [Reduction; 2] = [Reduction::Shared, Reduction::Subgroup];

    /// Short name for labels and tuning tables.
    pub fn name(self) -> &'static str {
        match self {
            Reduction::Shared => "shared",
            Reduction::Subgroup => "subgroup",
        }
    }
}

/// The WGSL sources, by path under `src/wgsl/`.
fn file(path: &str) -> Option<&'static str> {
    Some(match path {
        "common.wgsl" => include_str!("wgsl/common.wgsl"),
        "gemv.wgsl" => include_str!("wgsl/gemv.wgsl"),
        "gemv_q8.wgsl" => include_str!("wgsl/gemv_q8.wgsl"),
        "gemv_params.wgsl" => include_str!("wgsl/gemv_params.wgsl"),
        "gemm.wgsl" => include_str!("wgsl/gemm.wgsl"),
        "gemm_rows.wgsl" => include_str!("wgsl/gemm_rows.wgsl"),
        "gemm_rows_q8.wgsl" => include_str!("wgsl/gemm_rows_q8.wgsl"),
        "gemm_tiles_q8.wgsl" => include_str!("wgsl/gemm_tiles_q8.wgsl"),
        "gemm_rows_store.wgsl" => include_str!("wgsl/gemm_rows_store.wgsl"),
        "gemm_params.wgsl" => include_str!("wgsl/gemm_params.wgsl"),
        "gemm_store.wgsl" => include_str!("wgsl/gemm_store.wgsl"),
        "gemm_coop.wgsl" => include_str!("wgsl/gemm_coop.wgsl"),
        "gemm_splits.wgsl" => include_str!("wgsl/gemm_splits.wgsl"),
        "gemm_x16.wgsl" => include_str!("wgsl/gemm_x16.wgsl"),
        "gemm_io.wgsl" => include_str!("wgsl/gemm_io.wgsl"),
        "gemm_input.wgsl" => include_str!("wgsl/gemm_input.wgsl"),
        "gemm_norm_input.wgsl" => include_str!("wgsl/gemm_norm_input.wgsl"),
        "dequant.wgsl" => include_str!("wgsl/dequant.wgsl"),
        "stream.wgsl" => include_str!("wgsl/stream.wgsl"),
        "norm.wgsl" => include_str!("wgsl/norm.wgsl"),
        "embed.wgsl" => include_str!("wgsl/embed.wgsl"),
        "attn_decode.wgsl" => include_str!("wgsl/attn_decode.wgsl"),
        "attn_combine.wgsl" => include_str!("wgsl/attn_combine.wgsl"),
        "attn_params.wgsl" => include_str!("wgsl/attn_params.wgsl"),
        "attn_pages.wgsl" => include_str!("wgsl/attn_pages.wgsl"),
        "attn_rows.wgsl" => include_str!("wgsl/attn_rows.wgsl"),
        "attn_prepare.wgsl" => include_str!("wgsl/attn_prepare.wgsl"),
        "attn_score.wgsl" => include_str!("wgsl/attn_score.wgsl"),
        "attn_prep.wgsl" => include_str!("wgsl/attn_prep.wgsl"),
        "attn_prefill.wgsl" => include_str!("wgsl/attn_prefill.wgsl"),
        "attn_rows_sg.wgsl" => include_str!("wgsl/attn_rows_sg.wgsl"),
        "attn_row_pass.wgsl" => include_str!("wgsl/attn_row_pass.wgsl"),
        "attn_tiles.wgsl" => include_str!("wgsl/attn_tiles.wgsl"),
        "attn_tile_rows.wgsl" => include_str!("wgsl/attn_tile_rows.wgsl"),
        "attn_coop.wgsl" => include_str!("wgsl/attn_coop.wgsl"),
        "attn_causal_io.wgsl" => include_str!("wgsl/attn_causal_io.wgsl"),
        "sample.wgsl" => include_str!("wgsl/sample.wgsl"),
        "gather.wgsl" => include_str!("wgsl/gather.wgsl"),
        "q8_grid.wgsl" => include_str!("wgsl/q8_grid.wgsl"),
        "q8_round.wgsl" => include_str!("wgsl/q8_round.wgsl"),
        "elementwise.wgsl" => include_str!("wgsl/elementwise.wgsl"),
        "vision_conv.wgsl" => include_str!("wgsl/vision_conv.wgsl"),
        "vision_conv_gemm.wgsl" => include_str!("wgsl/vision_conv_gemm.wgsl"),
        "vision_slice_sum.wgsl" => include_str!("wgsl/vision_slice_sum.wgsl"),
        "vision_binary.wgsl" => include_str!("wgsl/vision_binary.wgsl"),
        "vision_pool.wgsl" => include_str!("wgsl/vision_pool.wgsl"),
        "vision_matmul.wgsl" => include_str!("wgsl/vision_matmul.wgsl"),
        "vision_softmax.wgsl" => include_str!("wgsl/vision_softmax.wgsl"),
        "vision_index.wgsl" => include_str!("wgsl/vision_index.wgsl"),
        "activation.wgsl" => include_str!("wgsl/activation.wgsl"),
        "rope.wgsl" => include_str!("wgsl/rope.wgsl"),
        "softmax.wgsl" => include_str!("wgsl/softmax.wgsl"),
        "argmax.wgsl" => include_str!("wgsl/argmax.wgsl"),
        "wgreduce/shared.wgsl" => include_str!("wgsl/wgreduce/shared.wgsl"),
        "rowsreduce/shared.wgsl" => include_str!("wgsl/rowsreduce/shared.wgsl"),
        "rowsreduce/subgroup.wgsl" => include_str!("wgsl/rowsreduce/subgroup.wgsl"),
        "wgreduce/subgroup.wgsl" => include_str!("wgsl/wgreduce/subgroup.wgsl"),
        "reduce/shared.wgsl" => include_str!("wgsl/reduce/shared.wgsl"),
        "reduce/subgroup.wgsl" => include_str!("wgsl/reduce/subgroup.wgsl"),
        "quant/kquant_scales.wgsl" => include_str!("wgsl/quant/kquant_scales.wgsl"),
        "quant/f32.wgsl" => include_str!("wgsl/quant/f32.wgsl"),
        "quant/f16.wgsl" => include_str!("wgsl/quant/f16.wgsl"),
        "quant/q4_0.wgsl" => include_str!("wgsl/quant/q4_0.wgsl"),
        "quant/q4_1.wgsl" => include_str!("wgsl/quant/q4_1.wgsl"),
        "quant/q5_0.wgsl" => include_str!("wgsl/quant/q5_0.wgsl"),
        "quant/q5_1.wgsl" => include_str!("wgsl/quant/q5_1.wgsl"),
        "quant/q8_0.wgsl" => include_str!("wgsl/quant/q8_0.wgsl"),
        "quant/q4_k.wgsl" => include_str!("wgsl/quant/q4_k.wgsl"),
        "quant/q5_k.wgsl" => include_str!("wgsl/quant/q5_k.wgsl"),
        "quant/q6_k.wgsl" => include_str!("wgsl/quant/q6_k.wgsl"),
        "quant/q6_k_groups.wgsl" => include_str!("wgsl/quant/q6_k_groups.wgsl"),
        "coop_weights/any.wgsl" => include_str!("wgsl/coop_weights/any.wgsl"),
        "kv/f32.wgsl" => include_str!("wgsl/kv/f32.wgsl"),
        "kv/f16.wgsl" => include_str!("wgsl/kv/f16.wgsl"),
        "coop_weights/q4_k.wgsl" => include_str!("wgsl/coop_weights/q4_k.wgsl"),
        "coop_weights/q6_k.wgsl" => include_str!("wgsl/coop_weights/q6_k.wgsl"),
        "q8dot/k_pairs.wgsl" => include_str!("wgsl/q8dot/k_pairs.wgsl"),
        "q8dot/qh5.wgsl" => include_str!("wgsl/q8dot/qh5.wgsl"),
        "q8dot/half_words.wgsl" => include_str!("wgsl/q8dot/half_words.wgsl"),
        "q8dot/input.wgsl" => include_str!("wgsl/q8dot/input.wgsl"),
        "q8dot/row_units.wgsl" => include_str!("wgsl/q8dot/row_units.wgsl"),
        "q8dot/rows.wgsl" => include_str!("wgsl/q8dot/rows.wgsl"),
        "q8dot/one_block.wgsl" => include_str!("wgsl/q8dot/one_block.wgsl"),
        "q8dot/two_blocks.wgsl" => include_str!("wgsl/q8dot/two_blocks.wgsl"),
        "q8dot/k_unit.wgsl" => include_str!("wgsl/q8dot/k_unit.wgsl"),
        "q8dot/q4_0.wgsl" => include_str!("wgsl/q8dot/q4_0.wgsl"),
        "q8dot/q4_1.wgsl" => include_str!("wgsl/q8dot/q4_1.wgsl"),
        "q8dot/q5_0.wgsl" => include_str!("wgsl/q8dot/q5_0.wgsl"),
        "q8dot/q5_1.wgsl" => include_str!("wgsl/q8dot/q5_1.wgsl"),
        "q8dot/q8_0.wgsl" => include_str!("wgsl/q8dot/q8_0.wgsl"),
        "q8dot/q4_k.wgsl" => include_str!("wgsl/q8dot/q4_k.wgsl"),
        "q8dot/q5_k.wgsl" => include_str!("wgsl/q8dot/q5_k.wgsl"),
        "q8dot/q6_k.wgsl" => include_str!("wgsl/q8dot/q6_k.wgsl"),
        _ => return None,
    })
}

fn quant_file(ty: GgmlType) -> &'static str {
    match ty {
        GgmlType::F32 => "quant/f32.wgsl",
        GgmlType::F16 => "quant/f16.wgsl",
        GgmlType::Q4_0 => "quant/q4_0.wgsl",
        GgmlType::Q4_1 => "quant/q4_1.wgsl",
        GgmlType::Q5_0 => "quant/q5_0.wgsl",
        GgmlType::Q5_1 => "quant/q5_1.wgsl",
        GgmlType::Q8_0 => "quant/q8_0.wgsl",
        GgmlType::Q4K => "quant/q4_k.wgsl",
        GgmlType::Q5K => "quant/q5_k.wgsl",
        GgmlType::Q6K => "quant/q6_k.wgsl",
    }
}

/// Values one decoding step of `ty`'s quant snippet (`step_weights`) yields: 8 where the
/// snippet decodes two runs of 4 a step (its `XB` above 0: Q4_0, Q4_1, Q5_0, Q5_1, F16), else
/// 4. A table (GEMM recording asks per matrix); a test holds it to each snippet's `XB`.
pub fn step_elems(ty: GgmlType) -> usize {
    match ty {
        GgmlType::Q4_0 | GgmlType::Q4_1 | GgmlType::Q5_0 | GgmlType::Q5_1 | GgmlType::F16 => 8,
        _ => 4,
    }
}

fn coop_weights_file(ty: GgmlType) -> &'static str {
    match ty {
        GgmlType::Q4K => "coop_weights/q4_k.wgsl",
        GgmlType::Q6K => "coop_weights/q6_k.wgsl",
        _ => "coop_weights/any.wgsl",
    }
}

/// Whether the tensor-core GEMM's weights of `ty` are read as vec4s — Q4_K's block heads and
/// quant words, Q6_K's runs — from its binding 7, `w4`, which the host then binds: the layout
/// has it only where the shader reads it.
pub fn coop_reads_vec4s(ty: GgmlType) -> bool {
    matches!(ty, GgmlType::Q4K | GgmlType::Q6K)
}

/// The KV cache element snippet of the attention kernels (`kv`): the cache's type, F32 or F16
/// ([`crate::attention::KV_TYPES`]); `None` is F32. Any other type names a file that does not
/// exist, so its module fails validation naming it.
fn kv_file(ty: Option<GgmlType>) -> String {
    match ty {
        None | Some(GgmlType::F32) => "kv/f32.wgsl".to_owned(),
        Some(GgmlType::F16) => "kv/f16.wgsl".to_owned(),
        Some(other) => format!("kv/{}.wgsl", other.name()),
    }
}

/// Expands `//!include` lines of `path`: `quant` (the type's decoder), `q8dot` (its int8 dot
/// product, `gemv_q8.wgsl`), `coop_weights` (the tensor-core GEMM's weight step: Q4_K's reads
/// the block head as one vec4, every other type's is `step_weights`), `kv` (the attention
/// kernels' KV cache element, `quant` naming it), `reduce` (row groups), `wgreduce` (whole
/// workgroup) and `rowsreduce` (the few-row GEMMs' quads of rows and tokens) name the snippet
/// chosen by the arguments, anything else a
/// file. Each file is included once.
pub fn assemble(path: &str, quant: Option<GgmlType>, reduce: Option<Reduction>) -> String {
    let mut out = String::new();
    let mut seen = Vec::new();
    expand(path, quant, reduce, &mut seen, &mut out);
    out
}

fn expand(
    path: &str,
    quant: Option<GgmlType>,
    reduce: Option<Reduction>,
    seen: &mut Vec<String>,
    out: &mut String,
) {
    let resolved = match (path, quant, reduce) {
        ("quant", Some(ty), _) => quant_file(ty).to_owned(),
        ("q8dot", Some(ty), _) => quant_file(ty).replacen("quant/", "q8dot/", 1),
        ("coop_weights", Some(ty), _) => coop_weights_file(ty).to_owned(),
        ("kv", ty, _) => kv_file(ty),
        ("reduce", _, Some(r)) => format!("reduce/{}.wgsl", r.name()),
        ("wgreduce", _, Some(r)) => format!("wgreduce/{}.wgsl", r.name()),
        ("rowsreduce", _, Some(r)) => format!("rowsreduce/{}.wgsl", r.name()),
        _ => path.to_owned(),
    };
    if seen.contains(&resolved) {
        return;
    }
    seen.push(resolved.clone());
    // The table is closed: an unknown name is a bug in this crate. It becomes a line that is
    // not WGSL, so the naga tests fail naming the file.
    let Some(text) = file(&resolved) else {
        out.push_str(&format!("missing source file {resolved}\n"));
        return;
    };
    for line in text.lines() {
        match line.trim().strip_prefix("//!include ") {
            Some(inner) => expand(inner.trim(), quant, reduce, seen, out),
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coop_weights_read_vec4s_where_the_host_binds_them() {
        for ty in GgmlType::ALL {
            let src = assemble("gemm_coop.wgsl", Some(ty), None);
            let reads = src
                .lines()
                .any(|l| !l.trim_start().starts_with("//") && l.contains("w4["));
            assert_eq!(reads, coop_reads_vec4s(ty), "{}", ty.name());
        }
    }

    #[test]
    fn the_subgroup_row_pass_holds_what_its_shape_allows() {
        let pmax: u32 = file("attn_rows_sg.wgsl")
            .and_then(|src| {
                src.lines()
                    .find_map(|l| l.strip_prefix("const PMAX: u32 = "))
            })
            .and_then(|v| v.trim_end_matches(';').trim_end_matches('u').parse().ok())
            .expect("attn_rows_sg.wgsl: no `const PMAX`");
        assert_eq!(pmax, crate::attention::ROWS_SG_PARTS);
    }

    #[test]
    fn kv_snippets_exist_for_the_cache_types_only() {
        use crate::attention::KV_TYPES;
        for ty in GgmlType::ALL {
            let src = assemble("attn_prefill.wgsl", Some(ty), None);
            let missing = src.contains("missing source file");
            assert_eq!(missing, !KV_TYPES.contains(&ty), "{}", ty.name());
        }
    }

    #[test]
    fn step_elems_follow_each_snippets_xb() {
        for ty in GgmlType::ALL {
            let xb: u32 = file(quant_file(ty))
                .and_then(|src| src.lines().find_map(|l| l.strip_prefix("const XB: u32 = ")))
                .and_then(|v| v.trim_end_matches(';').trim_end_matches('u').parse().ok())
                .unwrap_or_else(|| panic!("{}: no `const XB` in its snippet", ty.name()));
            assert_eq!(step_elems(ty), if xb > 0 { 8 } else { 4 }, "{}", ty.name());
        }
    }
}
