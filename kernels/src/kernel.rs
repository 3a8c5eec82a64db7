//! Kernel descriptors: which WGSL a variant is, its override constants, what it needs.

use crate::quant::GgmlType;
use crate::source::{Reduction, assemble};

/// A kernel family: one WGSL file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    /// Matrix-vector product with fused dequantization.
    Gemv,
    /// Matrix-vector product of block-quantized weights with an int8 input vector
    /// (`dot4I8Packed`).
    GemvQ8,
    /// Matrix-matrix product with fused dequantization (prefill).
    Gemm,
    /// The same product for a few rows (batched decode), shaped like the GEMV.
    GemmRows,
    /// The few-row product on int8 input blocks (`dot4I8Packed`), shaped like the int8 GEMV.
    GemmRowsQ8,
    /// The tiled product on int8 input blocks: each thread rows × tokens of the output, a
    /// subgroup's input loads shared.
    GemmTilesQ8,
    /// The prefill product on cooperative matrices (tensor cores), f16 operands.
    GemmCoop,
    /// The splits of a tensor-core product split along K, added (bias or residual with them).
    GemmSplits,
    /// The tensor-core product's input rows formed and rounded to f16 once per product.
    GemmInputF16,
    /// Blocks to f32.
    Dequant,
    /// Streaming read (the bandwidth ceiling).
    Stream,
    /// RMSNorm / LayerNorm.
    Norm,
    /// Elementwise ops and activations.
    Elementwise,
    /// Rotary position embedding.
    Rope,
    /// Row softmax.
    Softmax,
    /// Argmax (greedy sampling).
    Argmax,
    /// Embedding rows gathered from a quantized table.
    Embed,
    /// Decode attention, first pass: one block of keys per workgroup.
    AttnDecode,
    /// Decode attention, second pass: combine the key blocks of each head.
    AttnCombine,
    /// Prefill attention, first pass: queries, keys and values of a batch prepared.
    AttnPrep,
    /// Prefill attention, second pass: causal attention of the batch, a row per workgroup.
    AttnPrefill,
    /// Batched decode's attention over a row table on subgroups: one query a (row, head).
    AttnRowsSubgroup,
    /// Prefill attention, second pass over tiles of rows of one sequence.
    AttnTiles,
    /// The same pass on cooperative matrices (tensor cores), f16 operands.
    AttnCoop,
    /// Token sampling.
    Sample,
    /// Rows of 32-bit words gathered by an index list.
    Gather,
    /// Activations rounded onto the int8-input GEMV's grid.
    Q8Round,
    /// ONNX vision: 2-D convolution with fused bias and activation.
    VisionConv,
    /// ONNX vision: one-group convolution as an implicit GEMM (split K optional).
    VisionConvGemm,
    /// ONNX vision: the slices of a split-K convolution summed, bias and activation added.
    VisionSliceSum,
    /// ONNX vision: broadcasting element-wise ops.
    VisionBinary,
    /// ONNX vision: max and average pooling.
    VisionPool,
    /// ONNX vision: batched strided matrix product.
    VisionMatmul,
    /// ONNX vision: softmax along an axis.
    VisionSoftmax,
    /// ONNX vision: data movement by an index map.
    VisionIndex,
}

impl Family {
    /// Name in labels, tuning tables and reports.
    pub fn name(self) -> &'static str {
        match self {
            Family::Gemv => "gemv",
            Family::GemvQ8 => "gemv_q8",
            Family::Gemm => "gemm",
            Family::GemmRows => "gemm_rows",
            Family::GemmRowsQ8 => "gemm_rows_q8",
            Family::GemmTilesQ8 => "gemm_tiles_q8",
            Family::GemmCoop => "gemm_coop",
            Family::GemmSplits => "gemm_splits",
            Family::GemmInputF16 => "gemm_x16",
            Family::Dequant => "dequant",
            Family::Stream => "stream",
            Family::Norm => "norm",
            Family::Elementwise => "elementwise",
            Family::Rope => "rope",
            Family::Softmax => "softmax",
            Family::Argmax => "argmax",
            Family::Embed => "embed",
            Family::AttnDecode => "attn_decode",
            Family::AttnCombine => "attn_combine",
            Family::AttnPrep => "attn_prep",
            Family::AttnPrefill => "attn_prefill",
            Family::AttnRowsSubgroup => "attn_rows_sg",
            Family::AttnTiles => "attn_tiles",
            Family::AttnCoop => "attn_coop",
            Family::Sample => "sample",
            Family::Gather => "gather",
            Family::Q8Round => "q8_round",
            Family::VisionConv => "vision_conv",
            Family::VisionConvGemm => "vision_conv_gemm",
            Family::VisionSliceSum => "vision_slice_sum",
            Family::VisionBinary => "vision_binary",
            Family::VisionPool => "vision_pool",
            Family::VisionMatmul => "vision_matmul",
            Family::VisionSoftmax => "vision_softmax",
            Family::VisionIndex => "vision_index",
        }
    }

    fn file(self) -> &'static str {
        match self {
            Family::Gemv => "gemv.wgsl",
            Family::GemvQ8 => "gemv_q8.wgsl",
            Family::Gemm => "gemm.wgsl",
            Family::GemmRows => "gemm_rows.wgsl",
            Family::GemmRowsQ8 => "gemm_rows_q8.wgsl",
            Family::GemmTilesQ8 => "gemm_tiles_q8.wgsl",
            Family::GemmCoop => "gemm_coop.wgsl",
            Family::GemmSplits => "gemm_splits.wgsl",
            Family::GemmInputF16 => "gemm_x16.wgsl",
            Family::Dequant => "dequant.wgsl",
            Family::Stream => "stream.wgsl",
            Family::Norm => "norm.wgsl",
            Family::Elementwise => "elementwise.wgsl",
            Family::Rope => "rope.wgsl",
            Family::Softmax => "softmax.wgsl",
            Family::Argmax => "argmax.wgsl",
            Family::Embed => "embed.wgsl",
            Family::AttnDecode => "attn_decode.wgsl",
            Family::AttnCombine => "attn_combine.wgsl",
            Family::AttnPrep => "attn_prep.wgsl",
            Family::AttnPrefill => "attn_prefill.wgsl",
            Family::AttnRowsSubgroup => "attn_rows_sg.wgsl",
            Family::AttnTiles => "attn_tiles.wgsl",
            Family::AttnCoop => "attn_coop.wgsl",
            Family::Sample => "sample.wgsl",
            Family::Gather => "gather.wgsl",
            Family::Q8Round => "q8_round.wgsl",
            Family::VisionConv => "vision_conv.wgsl",
            Family::VisionConvGemm => "vision_conv_gemm.wgsl",
            Family::VisionSliceSum => "vision_slice_sum.wgsl",
            Family::VisionBinary => "vision_binary.wgsl",
            Family::VisionPool => "vision_pool.wgsl",
            Family::VisionMatmul => "vision_matmul.wgsl",
            Family::VisionSoftmax => "vision_softmax.wgsl",
            Family::VisionIndex => "vision_index.wgsl",
        }
    }
}

/// One concrete kernel variant: a family, its quantization type and reduction where it has
/// them, and values for its `override` constants.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KernelSpec {
    /// The family.
    pub family: Family,
    /// The weight type, for families that decode weights; the KV cache's element type
    /// ([`crate::attention::KV_TYPES`]), for the attention families that read or write one.
    pub quant: Option<GgmlType>,
    /// The reduction, for families that reduce.
    pub reduction: Option<Reduction>,
    /// `override` constant values, by name.
    pub constants: Vec<(&'static str, u32)>,
}

impl KernelSpec {
    /// The assembled WGSL module.
    pub fn wgsl(&self) -> String {
        assemble(self.family.file(), self.quant, self.reduction)
    }

    /// The entry point.
    pub fn entry(&self) -> &'static str {
        "main"
    }

    /// Whether the module uses subgroup operations or builtins (needs the SUBGROUP feature).
    pub fn needs_subgroups(&self) -> bool {
        self.reduction == Some(Reduction::Subgroup)
            || self.family == Family::AttnRowsSubgroup
            || self.needs_cooperative_matrix()
    }

    /// Whether the module uses cooperative matrices on f16 operands (needs the
    /// EXPERIMENTAL_COOPERATIVE_MATRIX and SHADER_F16 features, and 32-lane subgroups).
    pub fn needs_cooperative_matrix(&self) -> bool {
        matches!(self.family, Family::GemmCoop | Family::AttnCoop)
    }

    /// Whether the module computes on f16 values (`enable f16`: needs SHADER_F16): the
    /// tensor-core GEMM, the f16 input rows it reads, and prompt attention on tensor cores.
    pub fn needs_f16(&self) -> bool {
        matches!(
            self.family,
            Family::GemmCoop | Family::GemmInputF16 | Family::AttnCoop
        )
    }

    /// Whether the module keeps naga's loop-bounding counter (a counter on every loop that
    /// breaks out after 2^64 trips, so a runaway loop cannot hang the device). The counter hides
    /// a loop's trip count from the driver's compiler, so loops with constant trip counts are
    /// not unrolled. Dropped by the tensor-core kernels (fragment loops), attention (the key and
    /// head-dimension walks: the row-table pass measured 127.9 → 67.5 µs and the long-context
    /// decode 40.8 → 25.4 µs without it on an H100, docs/performance.md "v40"), the int8
    /// few-row GEMM (the 32-row GEMMs 9–26% faster) and, since v42, every other family of a
    /// decode step — the GEMVs, the float few-row GEMM, the split sums and f16 input rows, the
    /// norms, the int8 rounding, embedding, the attention's preparation, sampling and the
    /// gather: without it on the H200 SmolLM2 decoded 1,123–1,125 against 891–974 tok/s at one
    /// stream and 4,329–4,347 against 3,593–3,617 at eight, Gemma 3 1,102–1,123 against
    /// 998–1,000 and 4,693–4,735 against 4,064 (docs/performance.md "v42"), and the kernels met
    /// the CPU in `kernels_vs_cpu` on an H100 (v40, v43). The families no decode step runs keep
    /// it (the f32 tiled GEMM, dequantization, streaming, element-wise, RoPE, softmax, the int8
    /// tiled GEMM of CPU adapters, vision), until measured. (v40 read a failure of the tiled
    /// GEMM's test on NVIDIA as drift without the counter; v43 found the test had run the
    /// tensor-core path, whose f16 products its f32 bound does not hold.) The runtime's
    /// `GPUPORT_LOOP_BOUNDING` / `GPUPORT_UNBOUNDED_LOOPS` override this per family.
    pub fn loop_bounding(&self) -> bool {
        !(self.needs_cooperative_matrix()
            || matches!(
                self.family,
                Family::AttnDecode
                    | Family::AttnCombine
                    | Family::AttnPrefill
                    | Family::AttnRowsSubgroup
                    | Family::AttnTiles
                    | Family::AttnPrep
                    | Family::GemmRowsQ8
                    | Family::Gemv
                    | Family::GemvQ8
                    | Family::GemmRows
                    | Family::GemmSplits
                    | Family::GemmInputF16
                    | Family::Norm
                    | Family::Q8Round
                    | Family::Embed
                    | Family::Argmax
                    | Family::Sample
                    | Family::Gather
            ))
    }

    /// A stable, readable label: `gemv.q4_K.subgroup.WG=128.ROWS=8.RPT=2`.
    pub fn label(&self) -> String {
        let mut parts = vec![self.family.name().to_owned()];
        parts.extend(self.quant.map(|q| q.name().to_owned()));
        parts.extend(self.reduction.map(|r| r.name().to_owned()));
        parts.extend(self.constants.iter().map(|(k, v)| format!("{k}={v}")));
        parts.join(".")
    }

    /// The value of constant `name`, if set.
    pub fn constant(&self, name: &str) -> Option<u32> {
        self.constants
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| *v)
    }
}
