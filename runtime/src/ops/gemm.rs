//! GEMM launches (`gpuport_kernels::gemm`): a batch of rows times one matrix, through the tiled
//! kernel (prefill; the tensor-core kernel where the adapter has f16 cooperative matrices) or,
//! up to [`gemm::FEW_ROWS_MAX`] rows, the few-row kernel (batched decode) — on int8 input
//! blocks where the caller formed them ([`takes_q8_rows`]).

use std::sync::OnceLock;

use gpuport_kernels::gemm::{self, CoopTile, FewRowTunables, GemmParams, GemmTile, Q8Tile};
use gpuport_kernels::gemv::GemvInput;
use gpuport_kernels::grid_2d;
use gpuport_kernels::quant::GgmlType;

use super::{elems, knob, knob_set, matrix, weight_chunks, whole};
use crate::device::Gpu;
use crate::error::GpuError;
use crate::recorder::Recorder;
use crate::tensor::Tensor;

/// One GEMM: `Y[t, y_first + r] = (W input(X[t]))[r] (+ residual or bias)` for `tokens` token
/// rows.
#[derive(Clone, Copy)]
pub struct GemmCall<'a> {
    /// The matrix `[rows, cols]`.
    pub w: &'a Tensor,
    /// The input, `tokens` rows of `x_stride` elements (at least `input.x_len(cols)`).
    pub x: &'a Tensor,
    /// The output, `tokens` rows of `y_stride` elements.
    pub y: &'a Tensor,
    /// Tokens (rows of X and Y).
    pub tokens: usize,
    /// Elements per row of X.
    pub x_stride: usize,
    /// Elements per row of Y.
    pub y_stride: usize,
    /// Column of Y the first row of W goes to.
    pub y_first: usize,
    /// Added to the output (same indexing as `y`).
    pub residual: Option<&'a Tensor>,
    /// Added to every token's row: element `y_first + r` to column `y_first + r` (at least
    /// `y_first + rows` elements; a stacked projection's biases side by side). Not with
    /// `residual`.
    pub bias: Option<&'a Tensor>,
    /// Plain or a GLU of each X row's two halves; or [`GemvInput::Q8Blocks`]: X holds each
    /// row as the int8-input GEMV's blocks (`input.x_len(cols)` words a row, `x_stride` a
    /// multiple of 4), multiplied on the int8 few-row kernel (see [`takes_q8_rows`]); or the
    /// RMSNorm of each X row ([`GemvInput::RmsNorm`], [`GemvInput::RmsNormPlusOne`], weights
    /// and epsilon in `norm`), on the float few-row kernel and on tensor cores with f16 input
    /// rows, whose forming pass norms them (see [`takes_norm_rows`]).
    pub input: GemvInput,
    /// The norm forms' weights (`cols` f32) and epsilon; `None` for every other form.
    pub norm: Option<(&'a Tensor, f32)>,
}

impl<'a> GemmCall<'a> {
    /// A one-row int8-input GEMV ([`GemvInput::Q8Blocks`], without norm or fold) as a GEMM of
    /// one token, for adapters where the int8 tiled kernel takes one row
    /// ([`q8_tiles_min_tokens`] ≤ 1); `None` for every other GEMV.
    pub fn from_q8_gemv(call: &super::GemvCall<'a>) -> Option<GemmCall<'a>> {
        if call.input != GemvInput::Q8Blocks || call.norm.is_some() || call.fold.is_some() {
            return None;
        }
        Some(GemmCall {
            w: call.w,
            x: call.x,
            y: call.y,
            tokens: 1,
            x_stride: elems(call.x),
            y_stride: elems(call.y),
            y_first: call.y_first,
            residual: call.residual,
            bias: None,
            input: GemvInput::Q8Blocks,
            norm: None,
        })
    }
}

/// Which kernel a GEMM runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GemmPath {
    /// The tiled GEMM (`gemm.wgsl`) with this tile.
    Tiled(GemmTile),
    /// The few-row GEMM (`gemm_rows.wgsl`) with these tunables (the tokens per pass evened
    /// out by [`FewRowTunables::pass_tokens`]).
    FewRows(FewRowTunables),
    /// The tensor-core GEMM (`gemm_coop.wgsl`) with this tile (needs
    /// [`Gpu::has_coop_f16`]), its columns split `splits` ways (1: not split; more: each
    /// split's sums into scratch, added by `gemm_splits.wgsl`; see [`coop_splits`]), or its
    /// tiles' chunks streamed by `stream` workgroups in equal runs.
    Coop {
        /// The tile.
        tile: CoopTile,
        /// Splits along K (at least 1; at most one per chunk of columns); streamed, the
        /// partial-sum slots, which must be [`coop_stream_slots`]'s count.
        splits: u32,
        /// Workgroups that share out every tile's chunks in equal runs (stream-K: no last
        /// wave of whole tiles part empty; see [`coop_stream`]); 0: a grid of tiles.
        stream: u32,
        /// The input formed and rounded to f16 once first (`gemm_x16.wgsl` into the
        /// device's scratch), so every tile of weight rows reads 2 bytes a value instead of
        /// 4: the same bits either way (see [`coop_x16`]).
        x16: bool,
    },
    /// The few-row GEMM on int8 input blocks (`gemm_rows_q8.wgsl`): the path of a call whose
    /// input is [`GemvInput::Q8Blocks`] below [`q8_tiles_min_tokens`] rows.
    FewRowsQ8(FewRowTunables),
    /// The tiled GEMM on int8 input blocks (`gemm_tiles_q8.wgsl`): the path of a call whose
    /// input is [`GemvInput::Q8Blocks`] from [`q8_tiles_min_tokens`] rows.
    TilesQ8 {
        /// The tile.
        tile: Q8Tile,
        /// Splits along K (at least 1; at most one per unit of columns); past 1 each split's
        /// sums go into scratch and `gemm_splits.wgsl` adds them, as for [`GemmPath::Coop`].
        splits: u32,
    },
}

impl GemmPath {
    /// Whether the path reads int8 input blocks ([`GemvInput::Q8Blocks`]), and only they.
    pub fn reads_q8_blocks(self) -> bool {
        matches!(self, GemmPath::FewRowsQ8(_) | GemmPath::TilesQ8 { .. })
    }
}

/// Whether a GEMM of `tokens` rows over `w` should take int8 input blocks: the weights have
/// the int8 kernels ([`gpuport_kernels::gemv::takes_q8_input`]) and the call is one for an
/// int8 kernel ([`q8_rows_fit`]: the few-row kernel's at most [`gemm::FEW_ROWS_MAX`] rows, or
/// the int8 tiled kernel's from [`q8_tiles_min_tokens`]) below [`coop_min_q8_tokens`] where
/// the device has tensor cores. A caller that forms the blocks (`ops::q8_blocks`,
/// `ops::norm_blocks`) then calls [`gemm()`] with [`GemvInput::Q8Blocks`]; otherwise it passes
/// f32 rows.
pub fn takes_q8_rows(gpu: &Gpu, w: &Tensor, tokens: usize) -> bool {
    let Ok((ty, ..)) = matrix(w) else {
        return false;
    };
    // Off int8 blocks only where the f32 rows then go to tensor cores (not to the float
    // few-row kernel).
    let coop_from = coop_min_q8_tokens_for(ty).max(coop_min_tokens());
    gpuport_kernels::gemv::takes_q8_input(ty)
        && q8_rows_fit(gpu, tokens)
        && !(gpu.has_coop_f16() && tokens >= coop_from)
}

/// Whether some int8-input kernel takes a GEMM of `tokens` rows: the few-row kernel up to
/// [`gemm::FEW_ROWS_MAX`] rows, the int8 tiled kernel from [`q8_tiles_min_tokens`] (on a CPU
/// adapter every count: a batched engine's prompt chunks of hundreds of rows there ran the f32
/// tiled GEMM, ten times slower a row — SmolLM2's 8 × 64-row prompts on lavapipe 61 s).
pub fn q8_rows_fit(gpu: &Gpu, tokens: usize) -> bool {
    tokens <= gemm::FEW_ROWS_MAX || tokens >= q8_tiles_min_tokens(gpu)
}

/// Rows of int8 input blocks a batch of up to `tokens` rows needs room for ([`q8_rows_fit`]):
/// `tokens` where the int8 tiled kernel takes batches that large, else at most
/// [`gemm::FEW_ROWS_MAX`].
pub fn q8_block_rows(gpu: &Gpu, tokens: usize) -> usize {
    if q8_rows_fit(gpu, tokens) {
        tokens
    } else {
        tokens.min(gemm::FEW_ROWS_MAX)
    }
}

/// Most tokens per pass of the int8 few-row kernel on [`gemm_path`]'s path:
/// [`gemm::NX_Q8_MAX`] (16) by default, each weight unit decoded once for up to 16 tokens;
/// `GPUPORT_Q8_ROWS_NX` (1 to 16) moves it. On the H200 (docs/performance.md, "v31") passes
/// of 16 instead of 8 took the Llama-1B shape's 32 streams from 4,549 to 4,994 tok/s, and at
/// 64 tokens every int8 variant's fastest form was its 16-token one.
pub fn q8_pass_width() -> u32 {
    static NX: OnceLock<u32> = OnceLock::new();
    knob(&NX, "GPUPORT_Q8_ROWS_NX", gemm::NX_Q8_MAX).clamp(1, gemm::NX_Q8_MAX)
}

/// Fewest rows whose int8-input GEMMs move to the tensor-core kernel (on f32 rows) where the
/// device has it: [`COOP_MIN_Q8_TOKENS`] (32) by default; `GPUPORT_COOP_MIN_Q8_TOKENS` moves
/// it (never below [`coop_min_tokens`]: fewer f32 rows would take the float few-row kernel;
/// past [`gemm::FEW_ROWS_MAX`]: never). The sums differ from the one-row int8 GEMV's by the
/// input's rounding (f16 instead of int8 blocks), as a float model's batched rows already do:
/// a sequence's greedy ids are held to its solo run where the margins are clear
/// (docs/design/batched-forward.md).
pub fn coop_min_q8_tokens() -> usize {
    coop_min_q8_rule().0
}

/// [`coop_min_q8_tokens`] for weights of `ty`: the default unless `GPUPORT_COOP_MIN_Q8_TOKENS`
/// names the type (`32,q6_K=33`: a bare count sets every type's, `type=count` one type's).
pub fn coop_min_q8_tokens_for(ty: GgmlType) -> usize {
    let (all, per_type) = coop_min_q8_rule();
    per_type
        .iter()
        .find(|(t, _)| *t == ty)
        .map_or(*all, |(_, n)| *n)
}

/// The rule of [`coop_min_q8_tokens_for`]: every type's count and the types set apart.
type Q8CoopRule = (usize, Vec<(GgmlType, usize)>);

fn coop_min_q8_rule() -> &'static Q8CoopRule {
    static RULE: OnceLock<Q8CoopRule> = OnceLock::new();
    RULE.get_or_init(|| {
        let text = std::env::var("GPUPORT_COOP_MIN_Q8_TOKENS").unwrap_or_default();
        parse_q8_coop_rule(&text)
    })
}

/// `text` as [`coop_min_q8_tokens_for`] reads it; entries that do not parse are skipped (a
/// tuning knob falls back to the default rather than failing a forward).
fn parse_q8_coop_rule(text: &str) -> Q8CoopRule {
    let mut rule = (COOP_MIN_Q8_TOKENS, Vec::new());
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        match entry.split_once('=') {
            None => {
                if let Ok(n) = entry.parse() {
                    rule.0 = n;
                }
            }
            Some((name, n)) => {
                let ty = GgmlType::from_name(name.trim());
                if let (Some(ty), Ok(n)) = (ty, n.trim().parse()) {
                    rule.1.push((ty, n));
                }
            }
        }
    }
    rule
}

/// The default of [`coop_min_q8_tokens`]: 32 rows, with the 32-token tile
/// ([`COOP_NARROW_TOKENS`]). On an H100 (docs/performance.md, "v39", one call) the Llama-8B
/// shape's four GEMMs at 32 rows took 48.5 / 30.8 / 180.4 / 113.8 µs (q|k|v, attention
/// output, gate|up, down) on tensor cores in that tile against 63.8 / 47.2 / 220.9 / 133.6 on
/// the int8 few-row kernel, and 32 streams decoded 1,878 tok/s against 1,391 (the 1B 8,072
/// against 5,060). Until v38 it was 64: the 64-token tile at 32 rows, half its multiplies on
/// zeros, only matched the int8 kernel (v31 on the H200: 32 streams of the 1B 4,305 against
/// 4,977 tok/s; at 64 rows tensor cores 7,312 against 4,833).
pub const COOP_MIN_Q8_TOKENS: usize = 32;

/// The int8 few-row kernel's default variant ([`FewRowTunables::for_q8_matrix`]) for a call of
/// `tokens` rows over a matrix of `ty` with `rows` weight rows of `cols` columns:
/// - from [`Q8_ROWS_RULE_MIN_TOKENS`] rows, on matrices of at most [`Q8_ROWS_RULE_MAX_ROWS`]
///   weight rows, [`gemm::Q8_ROWS_RPT`] rows a thread and, on a GPU,
///   [`gemm::Q8_TARGET_THREADS`];
/// - below [`Q8_ROWS_RULE_MIN_TOKENS`] rows on a GPU, on matrices of
///   [`Q8_NARROW_RULE_MIN_DIM`] to [`Q8_ROWS_RULE_MAX_ROWS`] weight rows and at least
///   [`Q8_NARROW_RULE_MIN_DIM`] columns (the sizes v54's sweep measured), [`Q8_NARROW_LANES`]
///   lanes a row group (where a row has that many units), never widened, and
///   [`q8_narrow_rpt`] rows a thread;
/// - otherwise two rows a thread and [`gemm::TARGET_THREADS`] (the rule before v35), lanes
///   from [`Q8_NARROW_LANES`] below [`Q8_ROWS_RULE_MIN_TOKENS`] rows on a GPU (smaller
///   matrices and output projections, not measured on the narrow rule), else from 8; a CPU
///   adapter aims for 1 thread (8 lanes a row).
///
/// `GPUPORT_Q8_ROWS_RPT` (1-4) and `GPUPORT_Q8_ROWS_THREADS` set rows a thread and threads for
/// every call (v53's narrow rule: `GPUPORT_Q8_ROWS_RPT=2 GPUPORT_Q8_ROWS_THREADS=131072`).
pub fn q8_rows_rule(
    gpu: &Gpu,
    ty: GgmlType,
    tokens: usize,
    (rows, cols): (usize, usize),
) -> gemm::Q8RowsRule {
    static RPT: OnceLock<Option<u32>> = OnceLock::new();
    static THREADS: OnceLock<Option<usize>> = OnceLock::new();
    let narrow = tokens < Q8_ROWS_RULE_MIN_TOKENS;
    let wide = !narrow && rows <= Q8_ROWS_RULE_MAX_ROWS;
    let narrow_gpu = narrow
        && !gpu.is_cpu()
        && (Q8_NARROW_RULE_MIN_DIM..=Q8_ROWS_RULE_MAX_ROWS).contains(&rows)
        && cols >= Q8_NARROW_RULE_MIN_DIM;
    let rpt = if wide {
        gemm::Q8_ROWS_RPT
    } else if narrow_gpu {
        q8_narrow_rpt(ty)
    } else {
        2
    };
    let threads = if gpu.is_cpu() {
        1
    } else if wide {
        gemm::Q8_TARGET_THREADS
    } else if narrow_gpu {
        // No doubling: a row group stays one warp wide however few threads that gives.
        0
    } else {
        gemm::TARGET_THREADS
    };
    let first_lanes = if narrow && !gpu.is_cpu() {
        Q8_NARROW_LANES
    } else {
        gemm::FEW_ROWS_FIRST_LANES
    };
    let rpt = knob_set(&RPT, "GPUPORT_Q8_ROWS_RPT").unwrap_or(rpt);
    let threads = knob_set(&THREADS, "GPUPORT_Q8_ROWS_THREADS").unwrap_or(threads);
    gemm::Q8RowsRule {
        rpt: rpt.clamp(1, 4),
        threads,
        first_lanes,
    }
}

/// Fewest weight rows and columns of a matrix whose int8 few-row GEMMs below
/// [`Q8_ROWS_RULE_MIN_TOKENS`] rows take [`q8_narrow_rpt`] rows a thread at a warp a row group
/// ([`q8_rows_rule`]): 4,096, the smallest dimension of the Llama-8B shape's projections that
/// v54's sweep at 8 rows measured. Smaller matrices (the 1B's, Gemma 3's, SmolLM2's) keep
/// the rule before: four rows a thread halves their threads, which that sweep did not ask
/// about (v35's at 32 rows found two rows better on the 1B's q|k|v).
pub const Q8_NARROW_RULE_MIN_DIM: usize = 4096;

/// Rows a thread of the int8 few-row GEMMs below [`Q8_ROWS_RULE_MIN_TOKENS`] rows on a GPU
/// ([`q8_rows_rule`]): four, two for Q6_K. On an H100 at 8 rows (docs/performance.md, "v54":
/// `bench --gemm-only --shapes llama8b.attn,llama8b.ffn --gemm-tokens 8`, every variant) the
/// Llama-8B shape's Q4_K projections at a warp a row group took 14.1 / 12.9 / 53.9 µs (q|k|v,
/// attention output, gate|up) with four rows a thread against 23.5 / 13.4 / 65.8 with two (the
/// rule before); its Q6_K down projection 52.7 µs with two against 62.6 with four (and 58.3
/// on the rule before, two rows at 64 lanes).
pub fn q8_narrow_rpt(ty: GgmlType) -> u32 {
    match ty {
        GgmlType::Q6K => 2,
        _ => 4,
    }
}

/// Lanes a row group starts from in the int8 few-row GEMMs of fewer than
/// [`Q8_ROWS_RULE_MIN_TOKENS`] rows on a GPU: a warp a row group, as the one-row int8 GEMV
/// reads fastest (v43). On an H100 (docs/performance.md, "v44", one call) 8 streams decoded
/// the Llama-1B shape at 4,224 tok/s with 32 lanes against 3,862 on the rule before it (8
/// lanes doubled toward [`gemm::TARGET_THREADS`]: 8 or 16) and 3,647 with 16; the 8B at 1,149
/// against 1,014 and 1,029.
pub const Q8_NARROW_LANES: u32 = 32;

/// Fewest rows whose int8 few-row GEMMs take [`gemm::Q8_ROWS_RPT`] rows a thread
/// ([`q8_rows_rule`]): 32. On the H200 (docs/performance.md, "v35") the Llama shapes' seven
/// projections took 630 µs at 32 rows against 846 on the rule before it, and 8B 32-stream
/// decode rose from 1,167–1,169 to 1,443–1,446 tok/s; at 8 rows the new rule was slower on
/// the 8B gate|up (106 against 78 µs) and in sum (267 against 245 µs).
pub const Q8_ROWS_RULE_MIN_TOKENS: usize = 32;

/// Most weight rows of a matrix whose int8 few-row GEMMs take [`gemm::Q8_ROWS_RPT`] rows a
/// thread ([`q8_rows_rule`]): the tallest projection the v35 sweep measured (the Llama-8B
/// gate|up, 28,672 rows) rounded up. Output projections (49k-262k rows) keep the rule before
/// it, not measured on the new one alone: the Llama-1B shape's 32 streams ran 4% slower on it
/// in that call's one round (5,225 against 5,436 tok/s) while every projection below this
/// size was faster.
pub const Q8_ROWS_RULE_MAX_ROWS: usize = 32_768;

/// The path [`gemm()`] takes for `call` with `tile`: for int8 input blocks
/// ([`GemvInput::Q8Blocks`]) the int8 few-row kernel ([`FewRowTunables::for_q8_matrix`]);
/// otherwise from [`coop_min_tokens`] tokens the
/// tensor-core kernel where the device has it ([`coop_tile`]); otherwise for up to
/// [`gemm::FEW_ROWS_MAX`] tokens the few-row kernel at the default tunables for this matrix and
/// device ([`FewRowTunables::for_matrix`], [`gemm::TARGET_THREADS`] on a GPU), else the tiled
/// one with `tile`.
pub fn gemm_path(gpu: &Gpu, call: &GemmCall<'_>, tile: GemmTile) -> Result<GemmPath, GpuError> {
    static Q8_LANES: OnceLock<Option<u32>> = OnceLock::new();
    static FLOAT_LANES: OnceLock<Option<u32>> = OnceLock::new();
    let (ty, rows, cols, _) = matrix(call.w)?;
    let target = if gpu.is_cpu() {
        1
    } else {
        gemm::TARGET_THREADS
    };
    let subgroups = gpu.has_subgroups();
    if call.input == GemvInput::Q8Blocks {
        if call.tokens >= q8_tiles_min_tokens(gpu) {
            let tile = Q8Tile::for_tokens(call.tokens, gpu.subgroup_width());
            let splits = q8_tile_splits(gpu, ty, tile, (rows, cols, call.tokens));
            return Ok(GemmPath::TilesQ8 { tile, splits });
        }
        let t = FewRowTunables::for_q8_matrix(
            ty,
            rows,
            cols,
            subgroups,
            q8_rows_rule(gpu, ty, call.tokens, (rows, cols)),
        );
        let nx = q8_pass_width();
        let t = forced_lanes(&Q8_LANES, "GPUPORT_Q8_ROWS_LANES", t);
        return Ok(GemmPath::FewRowsQ8(FewRowTunables { nx, ..t }));
    }
    if takes_coop_rows(gpu, call.tokens)
        && let Some(path) = coop_path(gpu, ty, (rows, cols), call.tokens)
    {
        return Ok(path);
    }
    if call.tokens > gemm::FEW_ROWS_MAX {
        return Ok(GemmPath::Tiled(tile));
    }
    let t = FewRowTunables::for_matrix(ty, rows, cols, call.input, subgroups, target);
    Ok(GemmPath::FewRows(forced_lanes(
        &FLOAT_LANES,
        "GPUPORT_ROWS_LANES",
        t,
    )))
}

/// `t` with the lanes per row group the knob `name` forces (1-256; for A/Bs: v43 found the
/// one-row int8 GEMV 15-30% faster at 32 lanes a row than at 8 on an H100 and an H200, and the
/// few-row kernels start from 8), else as given.
fn forced_lanes(cell: &OnceLock<Option<u32>>, name: &str, t: FewRowTunables) -> FewRowTunables {
    knob_set(cell, name).map_or(t, |lanes| t.with_lanes(lanes))
}

/// Fewest rows whose int8-input GEMMs take the int8 tiled kernel instead of the few-row one
/// (1: a caller's one-row int8 GEMVs too, through [`GemmCall::from_q8_gemv`]):
/// `GPUPORT_Q8_TILES_MIN_TOKENS`, by default never on a GPU (not yet measured against the
/// few-row kernel on one; `cargo xtask bench --gemm-only` times both) and from
/// [`Q8_TILES_MIN_TOKENS_CPU`] on a CPU adapter.
pub fn q8_tiles_min_tokens(gpu: &Gpu) -> usize {
    static MIN: OnceLock<usize> = OnceLock::new();
    let default = if gpu.is_cpu() {
        Q8_TILES_MIN_TOKENS_CPU
    } else {
        usize::MAX
    };
    knob(&MIN, "GPUPORT_Q8_TILES_MIN_TOKENS", default)
}

/// The default of [`q8_tiles_min_tokens`] on a CPU adapter: every row count. On lavapipe (2
/// cores, docs/performance.md "v34") SmolLM2's projections took 126–196 µs at one row on the
/// tiled kernel against 164–799 µs on the int8 GEMV and 62–314 µs on the float one, and at 2,
/// 8 and 64 rows 3.2×, 3.8× and 2.9× less time than the fastest int8 few-row variant: a CPU
/// runs a workgroup's lanes as one thread's vector, where each lane owning whole rows beats
/// lanes that split a row and reduce.
pub const Q8_TILES_MIN_TOKENS_CPU: usize = 1;

/// How many ways [`gemm_path`] splits the columns of an int8 tiled GEMM with tile `t` over a
/// `rows × cols` matrix of `ty` at `tokens` tokens: as [`coop_splits`] splits a tensor-core
/// GEMM (toward [`coop_split_target`] workgroups, in units of the type's int8 unit), on a GPU;
/// never on a CPU adapter, which runs a few workgroups at a time.
pub fn q8_tile_splits(gpu: &Gpu, ty: GgmlType, t: Q8Tile, dims: (usize, usize, usize)) -> u32 {
    if gpu.is_cpu() {
        return 1;
    }
    let shape = q8_tile_shape(ty, t);
    splits_for_target(shape, dims, coop_split_target())
}

/// The tensor-core path [`gemm_path`] takes for a `rows × cols` matrix of `ty` at `tokens`
/// rows of float input where the device has tensor cores ([`takes_coop_rows`]): the chosen
/// tile, or the largest the adapter's limits hold that fetches the same way in chunks no
/// wider; `None` where none fits.
fn coop_path(
    gpu: &Gpu,
    ty: GgmlType,
    (rows, cols): (usize, usize),
    tokens: usize,
) -> Option<GemmPath> {
    let t = coop_tile(ty, rows, tokens);
    let tile = if coop_fits(gpu, ty, t) {
        t
    } else {
        coop_tiles(gpu, ty)
            .into_iter()
            .map(|fits| CoopTile {
                fetch: t.fetch,
                decode: t.decode,
                ..fits
            })
            .filter(|fits| fits.takes(ty) && fits.kc <= t.kc)
            .max_by_key(|t| (t.tm() * t.tn(), std::cmp::Reverse(t.kc)))?
    };
    let x16 = coop_x16() && x16_fits(gpu, tokens, cols);
    let dims = (rows, cols, tokens);
    if let Some(stream) = coop_stream_rule(tile, dims)
        && let Some(splits) = coop_stream_slots(tile, dims, stream)
    {
        return Some(GemmPath::Coop {
            tile,
            splits,
            x16,
            stream,
        });
    }
    let splits = coop_splits(tile, rows, cols, tokens);
    Some(GemmPath::Coop {
        tile,
        splits,
        x16,
        stream: 0,
    })
}

/// An int8 tile's (rows, tokens, columns per split chunk).
fn q8_tile_shape(ty: GgmlType, t: Q8Tile) -> (u32, u32, u32) {
    (t.rows(), t.tokens(), gemm::q8_unit_cols(ty) as u32)
}

/// Tiles of `tn` weight rows × `tm` tokens a GEMM of `rows` weight rows at `tokens` tokens
/// takes: its grid unsplit.
fn grid_tiles((tn, tm): (u32, u32), rows: usize, tokens: usize) -> usize {
    rows.div_ceil(tn as usize) * tokens.div_ceil(tm as usize)
}

/// A tensor-core tile's (rows, tokens, columns per split chunk).
fn coop_shape(t: CoopTile) -> (u32, u32, u32) {
    (t.tn(), t.tm(), t.kc)
}

/// Whether a GEMM of `tokens` rows on f32 input runs on tensor cores ([`gemm_path`]): where
/// the device has them, from [`coop_min_tokens`] rows. Its products are then f16: rounding its
/// rows onto the int8 grid first (as the one-row path's int8 input would be) buys no match.
pub fn takes_coop_rows(gpu: &Gpu, tokens: usize) -> bool {
    gpu.has_coop_f16() && tokens >= coop_min_tokens()
}

/// The tensor-core tile for `rows` weight rows of `ty` and `tokens` tokens: 128 tokens wide
/// from 65 tokens, 64 from 33, 32 below (16 a subgroup; from [`coop_narrow_tokens`] rows
/// only) and 128 rows wide where that grid still has [`COOP_MIN_TILES`] workgroups (else 64),
/// in chunks of [`coop_kc`] columns where the tile takes them (else 32), weights fetched as
/// [`coop_fetch`] says, decoded as [`coop_decode`] says. Up to [`COOP_SPLIT_DECODE_ROWS`]
/// tokens a subgroup owns [`coop_sub_rows`] rows: at 32, twice the subgroups along the same
/// rows (at most [`coop_half_rows_wn`]), or the same subgroups over half the rows where a
/// thread's share of the wider tile does not fit the kernel.
pub fn coop_tile(ty: GgmlType, rows: usize, tokens: usize) -> CoopTile {
    let wm = if tokens <= 64 { 2 } else { 4 };
    let sub_tokens = if tokens <= coop_narrow_max_tokens() && tokens >= coop_narrow_tokens() {
        16
    } else {
        32
    };
    let grid = |t: CoopTile| grid_tiles((t.tn(), t.tm()), rows, tokens);
    let wide = CoopTile {
        wm,
        wn: 2,
        sub_tokens,
        sub_rows: 64,
        kc: 32,
        fetch: coop_fetch(),
        decode: coop_decode(),
    };
    let t = if grid(wide) >= COOP_MIN_TILES {
        wide
    } else {
        CoopTile { wn: 1, ..wide }
    };
    // In order of preference, each in chunks of `coop_kc` columns where the type takes them,
    // else 32.
    let mut choices = Vec::with_capacity(4);
    if tokens <= COOP_SPLIT_DECODE_ROWS && coop_sub_rows() == 32 {
        // Half the rows a subgroup: twice the subgroups over the same rows, or the same
        // subgroups over half the rows.
        // (`GPUPORT_COOP_HALF_WN=8`: the tile of 256 rows first, for A/Bs.)
        let most = coop_half_rows_wn();
        let half = CoopTile {
            wn: (t.wn * 2).min(most),
            sub_rows: 32,
            ..t
        };
        if most == 8 && t.wn == 2 {
            choices.push(CoopTile { wn: 8, ..half });
        }
        choices.push(half);
        if half.wn > 2 {
            choices.push(CoopTile { wn: 2, ..half });
        }
    }
    choices.push(t);
    choices
        .into_iter()
        .flat_map(|c| [CoopTile { kc: coop_kc(), ..c }, c])
        .find(|c| c.takes(ty) && (c.input_quads() > 1 || coop_one_input()))
        .unwrap_or(t)
}

/// Whether [`coop_tile`] may choose a tile whose threads fetch one input quadruple a chunk
/// (the 32-token tile of 128 rows in chunks of 32: 27-33 KiB in two stages, where the tile
/// in chunks of 64 takes 47 KiB): no unless `GPUPORT_COOP_ONE_INPUT=1`, for A/Bs of how
/// many workgroups share a core (v48: the 47-KiB tile runs one a core on an H100).
pub fn coop_one_input() -> bool {
    static ON: OnceLock<u32> = OnceLock::new();
    knob(&ON, "GPUPORT_COOP_ONE_INPUT", 0) == 1
}

/// Weight rows a subgroup of batched decode's tensor-core tiles (up to
/// [`COOP_SPLIT_DECODE_ROWS`] tokens) owns: [`COOP_DECODE_SUB_ROWS`] unless
/// `GPUPORT_COOP_SUB_ROWS` says 64 (any value but 32 is 64), for A/Bs.
pub fn coop_sub_rows() -> u32 {
    static ROWS: OnceLock<u32> = OnceLock::new();
    knob(&ROWS, "GPUPORT_COOP_SUB_ROWS", COOP_DECODE_SUB_ROWS)
}

/// The default of [`coop_sub_rows`]: 32. At 32-64 rows the kernel is latency-bound; half the
/// rows a subgroup at the same rows a tile (twice the subgroups) took the registers a thread
/// from 188 to 107 (the 32-token Q4_K tile in chunks of 64) and, on an H100
/// (docs/performance.md, "v46", two interleaved rounds), the Llama-8B shape's gate|up at 32 /
/// 64 rows from 133.0 / 197.3 µs to 122.0 / 172.2, its down projection from 109.7 / 156.3 to
/// 94.9 / 119.4; 32 / 64 streams of the 8B from 2,513 / 3,574 tok/s to 2,671 / 3,945, of
/// the 1B from 10,623 / 16,006 to 11,452 / 17,372. Half the rows a tile instead (the same
/// subgroups) was slower than both on the gate|up projections (177.1 / 232.5 µs).
pub const COOP_DECODE_SUB_ROWS: u32 = 32;

/// Most subgroups along the rows of a tile of 32 rows a subgroup ([`coop_sub_rows`]): 4 (the
/// rows of the tile at 64 a subgroup) unless `GPUPORT_COOP_HALF_WN` says 2 (half of them) or
/// 8 (twice: 256 rows, 512 threads, where the tile at 64 a subgroup has two subgroups along
/// the rows), for A/Bs; any other value is 4.
pub fn coop_half_rows_wn() -> u32 {
    static WN: OnceLock<u32> = OnceLock::new();
    let wn = knob(&WN, "GPUPORT_COOP_HALF_WN", 4);
    if gemm::COOP_WN_HALF_ROWS.contains(&wn) {
        wn
    } else {
        4
    }
}

/// Fewest tokens (up to 32) whose tensor-core tile [`coop_tile`] makes 32 tokens wide instead
/// of 64: [`COOP_NARROW_TOKENS`] (every batch that fits it) unless
/// `GPUPORT_COOP_NARROW_TOKENS` says otherwise (33: never), for A/Bs.
pub fn coop_narrow_tokens() -> usize {
    static MIN: OnceLock<usize> = OnceLock::new();
    knob(&MIN, "GPUPORT_COOP_NARROW_TOKENS", COOP_NARROW_TOKENS)
}

/// Most tokens [`coop_tile`] gives the 32-token tile (a grid of several along the tokens
/// past 32): [`COOP_NARROW_MAX_TOKENS`] unless `GPUPORT_COOP_NARROW_MAX` says otherwise, for
/// A/Bs.
pub fn coop_narrow_max_tokens() -> usize {
    static MAX: OnceLock<usize> = OnceLock::new();
    knob(&MAX, "GPUPORT_COOP_NARROW_MAX", COOP_NARROW_MAX_TOKENS)
}

/// The default of [`coop_narrow_max_tokens`]: 32, one tile of tokens.
pub const COOP_NARROW_MAX_TOKENS: usize = 32;

/// The default of [`coop_narrow_tokens`]: 1, every batch of up to 32 rows (a 64-token tile
/// multiplies half zeros there). On an H100 (docs/performance.md, "v39", two interleaved
/// rounds at 32 rows) it took the Llama-8B shape's GEMMs from 66.6 / 42.4 / 210.5 / 147.2 µs
/// (q|k|v, attention output, gate|up, down) to 48.5 / 30.8 / 180.4 / 113.8 and the 1B's from
/// 34.3 / 64.9 / 56.7 to 25.1 / 50.5 / 52.6; 32 streams of SmolLM2 and Gemma 3 from 7,462 and
/// 8,323 tok/s to 8,398 and 9,312.
pub const COOP_NARROW_TOKENS: usize = 1;

/// Columns per chunk [`coop_tile`] gives the types and tiles that take more than 32
/// ([`gemm::coop_pairs`]: a Q4_K chunk as the pair of sub-blocks that share their quant
/// words): [`COOP_KC_WIDE`] unless `GPUPORT_COOP_KC` says 32, for A/Bs.
pub fn coop_kc() -> u32 {
    static KC: OnceLock<u32> = OnceLock::new();
    let kc = knob(&KC, "GPUPORT_COOP_KC", COOP_KC_WIDE);
    if gemm::COOP_KC.contains(&kc) { kc } else { 32 }
}

/// The default of [`coop_kc`]: 64. On an H100 (docs/performance.md, "v38"; two interleaved
/// rounds at 64 rows) the Llama shapes' Q4_K GEMMs took 3–7% less time than in chunks of 32
/// (1B gate|up 72.0 → 67.3 µs, 8B q|k|v 69.7 → 67.3, 8B gate|up 234.5 → 221.5), and the
/// 8B's 64 streams decoded 2,790 tok/s against 2,723 and 2,733.
pub const COOP_KC_WIDE: u32 = 64;

/// Workgroups below which [`coop_tile`] narrows the tile.
pub const COOP_MIN_TILES: usize = 48;

/// How many ways [`gemm_path`] splits the columns of a tensor-core GEMM with tile `t` over a
/// `rows × cols` matrix at `tokens` tokens: enough splits for the grid to reach
/// [`coop_split_target`] workgroups, each split at least [`COOP_SPLIT_MIN_CHUNKS`] chunks, at
/// most [`COOP_SPLITS_MAX`], and partials of at most [`COOP_SPLIT_SCRATCH_MAX`] bytes; the
/// count evened out so that no split is empty (1: not split).
///
/// Why: a workgroup walks its chunks of columns one after another, and each chunk costs a
/// memory latency and a barrier however little it multiplies; a grid of 32-128 tiles (a
/// 4096-row matrix at 32-512 tokens) leaves most of an H200's 132 cores idle or one
/// workgroup deep, with nothing to hide that latency.
pub fn coop_splits(t: CoopTile, rows: usize, cols: usize, tokens: usize) -> u32 {
    let target = match coop_split_wave() {
        Some(cores) if tokens <= COOP_SPLIT_DECODE_ROWS => cores * coop_tiles_a_core(t),
        _ => coop_split_target(),
    };
    splits_for_target(coop_shape(t), (rows, cols, tokens), target)
}

/// Cores whose one wave of workgroups [`coop_splits`] aims batched decode's grids at instead
/// of [`coop_split_target`]: `GPUPORT_COOP_SPLIT_WAVE` (unset, the default: the target), for
/// A/Bs (an H100's or H200's 132). v55's GEMM table (docs/performance.md) had two splits
/// beat the target's four or five on the Llama-8B's q|k|v and attention output at 32 rows
/// (39.6 / 25.6 against 41.4 / 27.9 µs) — their 47- and 28-KiB tiles run one a core, so
/// every split past one wave of 132 waits for the first — while its down projection's
/// 19-KiB tile, two a core, ran best at the target's four (95.9 µs; 140.2 in two).
pub fn coop_split_wave() -> Option<usize> {
    static CORES: OnceLock<Option<usize>> = OnceLock::new();
    super::knob_set(&CORES, "GPUPORT_COOP_SPLIT_WAVE").filter(|&c| c > 0)
}

/// Workgroups of tile `t` one core holds at once, by the rule v50 measured on an H100
/// (docs/design/coop-gemm.md, "Residency"): as many as fit 48 KiB with about 1 KiB beside
/// each, at least one.
pub fn coop_tiles_a_core(t: CoopTile) -> usize {
    let each = t.workgroup_bytes() as usize + 1024;
    (gemm::COOP_WORKGROUP_BYTES as usize / each).max(1)
}

/// [`coop_splits`] toward `target` workgroups for a tile of `tn` rows × `tm` tokens walking
/// chunks of `kc` columns.
fn splits_for_target(
    (tn, tm, kc): (u32, u32, u32),
    (rows, cols, tokens): (usize, usize, usize),
    target: usize,
) -> u32 {
    let grid = grid_tiles((tn, tm), rows, tokens);
    let chunks = cols.div_ceil(kc as usize);
    if chunks == 0 {
        return 1;
    }
    let want = if tokens <= COOP_SPLIT_DECODE_ROWS && coop_decode_splits() {
        // Batched decode's rows: whole at COOP_UNSPLIT_GRID tiles, else the most splits that
        // stay within the target.
        if grid >= COOP_UNSPLIT_GRID {
            1
        } else {
            target / grid.max(1)
        }
    } else {
        target.div_ceil(grid.max(1))
    };
    let scratch = COOP_SPLIT_SCRATCH_MAX / (4 * rows * tokens).max(1);
    let splits = want
        .min(chunks / COOP_SPLIT_MIN_CHUNKS)
        .min(scratch)
        .clamp(1, COOP_SPLITS_MAX);
    chunks.div_ceil(chunks.div_ceil(splits)).max(1) as u32
}

/// Whether a tensor-core GEMM with tile `t` over a `rows × cols` matrix at `tokens` tokens
/// may split its columns `splits` ways: 1 up to one split per chunk of columns (at most
/// [`COOP_SPLITS_MAX`]), and past 1 at most [`COOP_SPLIT_SCRATCH_MAX`] bytes of partials.
pub fn coop_split_fits(t: CoopTile, dims: (usize, usize, usize), splits: u32) -> bool {
    split_fits(t.kc, dims, splits)
}

/// Workgroups that stream a tensor-core GEMM's chunks where [`gemm_path`] streams it:
/// `GPUPORT_COOP_STREAM` (0, the default: never), for A/Bs. On an H100 (docs/performance.md,
/// "v55") 132 workgroups (one wave of the one-a-core tiles) were slower end to end on the
/// Llama-8B shape, 32 / 64 streams 2,643 / 4,164 tok/s against 2,827 / 4,512 (the gate|up
/// projections alone 2,767 / 4,344): its gate|up at 32 rows 126.2 µs against 123.7 whole,
/// its down projection 132.9 against 95.9 split four ways; only q|k|v and the attention
/// output at 64 rows ran faster (43.4 / 37.8 against 45.7 / 41.0).
pub fn coop_stream() -> u32 {
    static GROUPS: OnceLock<u32> = OnceLock::new();
    knob(&GROUPS, "GPUPORT_COOP_STREAM", 0)
}

/// Fewest tiles of a batched-decode GEMM's grid that [`gemm_path`] streams (where
/// [`coop_stream`] is on): `GPUPORT_COOP_STREAM_MIN_TILES`, 1 by default (128: only the grids
/// that run unsplit, for A/Bs).
pub fn coop_stream_min_tiles() -> usize {
    static MIN: OnceLock<usize> = OnceLock::new();
    knob(&MIN, "GPUPORT_COOP_STREAM_MIN_TILES", 1)
}

/// The workgroups [`coop_path`] streams a GEMM with tile `t` over `(rows, cols, tokens)` by:
/// [`coop_stream`]'s, for batched decode's rows (up to [`COOP_SPLIT_DECODE_ROWS`]) on grids of
/// at least [`coop_stream_min_tiles`] tiles; `None` otherwise.
fn coop_stream_rule(t: CoopTile, (rows, cols, tokens): (usize, usize, usize)) -> Option<u32> {
    let groups = coop_stream();
    let tiles = grid_tiles((t.tn(), t.tm()), rows, tokens);
    (groups > 0 && tokens <= COOP_SPLIT_DECODE_ROWS && tiles >= coop_stream_min_tiles() && cols > 0)
        .then_some(groups)
}

/// The partial-sum slots of a tensor-core GEMM with tile `t` over `(rows, cols, tokens)`
/// streamed by `groups` workgroups (`gemm_coop.wgsl`): the most runs that any one tile's
/// chunks meet, where the tiles' chunks, in one sequence, are cut into `groups` runs of
/// `⌊w · total / groups⌋..⌊(w + 1) · total / groups⌋`. `None` where it cannot stream: no
/// chunks, more workgroups than chunks or than the adapter's grid could ever hold, a count
/// the kernel's 32-bit products overflow, more than [`COOP_SPLITS_MAX`] slots, or partials
/// past [`COOP_SPLIT_SCRATCH_MAX`] bytes.
pub fn coop_stream_slots(
    t: CoopTile,
    (rows, cols, tokens): (usize, usize, usize),
    groups: u32,
) -> Option<u32> {
    let (tn, tm, kc) = coop_shape(t);
    let per = cols.div_ceil(kc as usize) as u64;
    let tiles = grid_tiles((tn, tm), rows, tokens) as u64;
    let total = tiles * per;
    let g = u64::from(groups);
    if g == 0 || total < g || (total + 1) * (g + 1) > u64::from(u32::MAX) {
        return None;
    }
    let run = |x: u64| stream_run(x, total, g);
    let slots = (0..tiles)
        .map(|tile| run(tile * per + per - 1) - run(tile * per) + 1)
        .max()
        .unwrap_or(1);
    let fits = slots as usize <= COOP_SPLITS_MAX
        && (slots == 1 || 4 * slots as usize * rows * tokens <= COOP_SPLIT_SCRATCH_MAX);
    fits.then_some(slots as u32)
}

/// The run of a streamed grid of `g` workgroups over `total` chunks that holds chunk `x`: the
/// largest `w` with `⌊w · total / g⌋ ≤ x` (`gemm_coop.wgsl` computes a tile's first run so, in
/// 32 bits).
fn stream_run(x: u64, total: u64, g: u64) -> u64 {
    ((x + 1) * g).div_ceil(total) - 1
}

/// [`coop_split_fits`] for an int8 tiled GEMM over weights of `ty` (splits in units of the
/// type's int8 unit).
pub fn q8_tile_split_fits(ty: GgmlType, dims: (usize, usize, usize), splits: u32) -> bool {
    split_fits(gemm::q8_unit_cols(ty) as u32, dims, splits)
}

/// Whether a GEMM walking chunks of `kc` columns may split them `splits` ways.
fn split_fits(kc: u32, (rows, cols, tokens): (usize, usize, usize), splits: u32) -> bool {
    let most = cols.div_ceil(kc as usize).clamp(1, COOP_SPLITS_MAX);
    let partials = 4 * splits as usize * rows * tokens;
    (1..=most).contains(&(splits as usize)) && (splits == 1 || partials <= COOP_SPLIT_SCRATCH_MAX)
}

/// Most rows of a GEMM whose split count [`coop_splits`] takes by the decode rule (batched
/// decode's 32–64 rows): no split from [`COOP_UNSPLIT_GRID`] tiles, else the most splits whose
/// grid stays within the target (rounded down). On an H100 (docs/performance.md, "v41", one
/// call) the Llama shapes' GEMMs at 32 and 64 rows, timed at 1–16 splits: the gate|up
/// projections ran fastest whole (8B 163.1 / 206.9 µs at 32 / 64 rows against 181.1 / 220.4 in
/// the 2 splits rounding up gave; 1B 38.9 / 54.0 against 50.8 / 67.9) and the q|k|v ones at
/// 5 splits, not 6 (8B 41.3 / 56.8 against 49.2 / 68.6; 1B 19.6 / 26.5 against 25.2 /
/// 35.3); the other projections' best counts (4 and 8) are what both rules give. Prompts keep
/// rounding up (v30's sweep at 512 rows). `GPUPORT_COOP_DECODE_SPLITS=0` gives the rule before.
pub const COOP_SPLIT_DECODE_ROWS: usize = 64;

/// Tiles from which a GEMM of up to [`COOP_SPLIT_DECODE_ROWS`] rows is not split: 128, about
/// one workgroup per core of an H100 or H200 (132).
pub const COOP_UNSPLIT_GRID: usize = 128;

/// Whether [`coop_splits`] takes the decode rule for up to [`COOP_SPLIT_DECODE_ROWS`] rows
/// (`GPUPORT_COOP_DECODE_SPLITS`, 1 by default; 0: round up as prompts do, the rule before
/// v41).
pub fn coop_decode_splits() -> bool {
    static ON: OnceLock<u32> = OnceLock::new();
    knob(&ON, "GPUPORT_COOP_DECODE_SPLITS", 1) != 0
}

/// Workgroups [`coop_splits`] aims the grid at: [`COOP_SPLIT_TARGET`];
/// `GPUPORT_COOP_SPLIT_TARGET` moves it (0: never split), to measure it on an adapter.
pub fn coop_split_target() -> usize {
    static TARGET: OnceLock<usize> = OnceLock::new();
    knob(&TARGET, "GPUPORT_COOP_SPLIT_TARGET", COOP_SPLIT_TARGET)
}

/// The default of [`coop_split_target`]: about two workgroups per core of an H200. The GEMM
/// sweep at 512 rows there (docs/performance.md, "v30") put every shape's best split count
/// at or below what 256 gives (the Llama-8B shape's attention output 207 µs unsplit against
/// 254 split 4 ways, as 512 split it; its q|k|v 346 µs split 2 ways against 395 in 3), and
/// the 1B's down projection at 2 (228 µs; 265 in 8, as 512 split it). At batched decode's
/// 32–64 rows ("v32") 1,024 and 2,048 were slower end to end on all four layouts.
pub const COOP_SPLIT_TARGET: usize = 256;

/// Fewest chunks of columns in one split.
pub const COOP_SPLIT_MIN_CHUNKS: usize = 8;

/// Most splits of one tensor-core GEMM.
pub const COOP_SPLITS_MAX: usize = 16;

/// Most bytes of split partials one GEMM writes.
pub const COOP_SPLIT_SCRATCH_MAX: usize = 64 << 20;

/// Whether [`gemm_path`] forms a tensor-core GEMM's input in f16 first (`x16` of
/// [`GemmPath::Coop`]): yes by default; `GPUPORT_COOP_X16=0` says no (to measure it).
///
/// Why: X is re-read by every tile of weight rows (224 times over the Llama-8B shape's gate
/// and up projections), 88% of the kernel's reads in f32; the tensor-core kernel converts it
/// to f16 anyway. On the H200 the same kernel over f16 weights (3.5 × the weight bytes, none
/// of the decoding) ran 1.8 × slower (docs/performance.md, "v30"): its time goes to bytes.
pub fn coop_x16() -> bool {
    static ON: OnceLock<u32> = OnceLock::new();
    knob(&ON, "GPUPORT_COOP_X16", 1) != 0
}

/// How the tensor-core GEMM fetches weights of the types with a run form
/// ([`gemm::CoopFetch`]): [`gemm::CoopFetch::DEFAULT`] unless `GPUPORT_COOP_FETCH` says 0 (a
/// step at a time, as before v37), 1 (runs) or 2 (runs, two chunks ahead: slower on most
/// shapes in v38), for A/Bs.
pub fn coop_fetch() -> gemm::CoopFetch {
    static WAY: OnceLock<u32> = OnceLock::new();
    let way = knob(&WAY, "GPUPORT_COOP_FETCH", gemm::CoopFetch::DEFAULT as u32) as usize;
    gemm::CoopFetch::ALL[way.min(gemm::CoopFetch::ALL.len() - 1)]
}

/// How the tensor-core GEMM turns weights' integers into floats ([`gemm::CoopDecode`]):
/// [`gemm::CoopDecode::DEFAULT`] unless `GPUPORT_COOP_DECODE` says 0 (conversions) or 1
/// (through their bits), for A/Bs.
pub fn coop_decode() -> gemm::CoopDecode {
    static WAY: OnceLock<u32> = OnceLock::new();
    let way = knob(
        &WAY,
        "GPUPORT_COOP_DECODE",
        gemm::CoopDecode::DEFAULT as u32,
    ) as usize;
    gemm::CoopDecode::ALL[way.min(gemm::CoopDecode::ALL.len() - 1)]
}

/// Whether `tokens` rows of `cols` f16 input values fit one storage binding (and come in
/// fours).
fn x16_fits(gpu: &Gpu, tokens: usize, cols: usize) -> bool {
    cols.is_multiple_of(4)
        && 2 * (tokens * cols) as u64 <= gpu.limits().max_storage_buffer_binding_size
}

/// Records `gemm_x16.wgsl`: `call`'s input rows formed as its input form says (the norm forms
/// with `call.norm`'s weights and epsilon) and rounded to f16 into `out`, `cols` values a row:
/// what the tensor-core GEMM reads with f16 input rows (`x16` of [`GemmPath::Coop`], which
/// records it itself; public for the tests, which hold it to the CPU reference on adapters
/// without tensor cores too). The norm forms take `norm_tokens` tokens a workgroup (1 to
/// [`gemm::X16_NORM_TOKENS_MAX`]; [`x16_norm_tokens`] on the GEMM's path).
pub fn form_f16_rows(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    call: &GemmCall<'_>,
    cols: usize,
    out: &Tensor,
    norm_tokens: u32,
) -> Result<(), GpuError> {
    let forms = gemm::X16_INPUTS.contains(&call.input)
        && call.input.is_row_norm() == call.norm.is_some()
        && call.norm.is_none_or(|(w, _)| elems(w) == cols);
    if !forms {
        return Err(GpuError::Shape(format!(
            "f16 input rows: {:?} input with norm weights {:?} (forms {:?}; the norm forms, and \
             only they, with {cols} weights)",
            call.input,
            call.norm.map(|(w, _)| &w.shape),
            gemm::X16_INPUTS
        )));
    }
    let x_rows = elems(call.x) / call.x_stride.max(1);
    let fits = x16_fits(gpu, call.tokens, cols)
        && call.x_stride >= call.input.x_len(cols)
        && x_rows >= call.tokens
        && out.bytes >= 2 * (call.tokens * cols) as u64
        && !out.shares_buffer(call.x);
    if !fits {
        return Err(GpuError::Shape(format!(
            "f16 input rows: {} tokens × {cols} columns from x {:?} (stride {}) into {} bytes \
             of their own (columns a multiple of 4, within one binding)",
            call.tokens, call.x.shape, call.x_stride, out.bytes
        )));
    }
    let norm_tokens = norm_tokens.clamp(1, gemm::X16_NORM_TOKENS_MAX);
    let spec = gemm::x16_spec(call.input, call.x_stride.is_multiple_of(4), norm_tokens);
    let groups = if call.input.is_row_norm() {
        (call.tokens as u32).div_ceil(norm_tokens)
    } else {
        ((call.tokens * cols / 4) as u32).div_ceil(gemm::X16_WG)
    };
    let grid = grid_2d(groups, gpu.limits().max_compute_workgroups_per_dimension);
    // Only the input's fields: no weights, no output rows.
    let p = GemmParams {
        cols: cols as u32,
        tokens: call.tokens as u32,
        x_stride: call.x_stride as u32,
        x_aux: cols as u32,
        grid_x: grid.0,
        splits: 1,
        eps: call.norm.map_or(0.0, |(_, eps)| eps),
        ..bytemuck::Zeroable::zeroed()
    };
    let norm_weights = call.norm.map_or(call.x, |(w, _)| w);
    // The split form's partials, Y and residual (`gemm_x16.wgsl` SRC 1): unread here.
    super::launch(
        gpu,
        rec,
        &spec,
        &p,
        &[call.x, out, call.x, norm_weights, call.x, out, call.x],
        grid,
    )
}

/// An RMSNorm of each of a GEMM's output rows (its whole rows, after its residual), rounded to
/// f16: the input rows of a following GEMM on tensor cores with f16 input rows
/// ([`gemm_f16_rows`]), formed as that GEMM would form them itself (`gemm_x16.wgsl`: the same
/// bits).
#[derive(Clone, Copy)]
pub struct NormRows<'a> {
    /// [`GemvInput::RmsNorm`] or [`GemvInput::RmsNormPlusOne`].
    pub form: GemvInput,
    /// The norm's weights (one per output column of the GEMM) and epsilon.
    pub norm: (&'a Tensor, f32),
    /// The rows: `tokens × rows` f16 values, in a buffer of their own.
    pub out: &'a Tensor,
}

/// Records [`gemm()`], then `rows` from its output. Where the GEMM splits along K over whole
/// rows and adds a residual, one pass adds its partials and forms the rows
/// (`gemm_x16.wgsl` SRC 1) where there would be two (`gemm_splits.wgsl`, then the f16 pass
/// over Y); otherwise the f16 pass follows the GEMM. Y and the rows are the same bits either
/// way, and the same as [`gemm()`] and then [`form_f16_rows`] over Y.
pub fn gemm_norm_rows(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    call: GemmCall<'_>,
    tile: GemmTile,
    rows: NormRows<'_>,
) -> Result<(), GpuError> {
    let (path, limit) = engine_path(gpu, &call, tile)?;
    gemm_norm_rows_on(gpu, rec, call, path, limit, rows)
}

/// [`gemm_norm_rows`] on an explicit path and largest weight binding (as [`gemm_on`]).
pub fn gemm_norm_rows_on(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    call: GemmCall<'_>,
    path: GemmPath,
    max_binding: u64,
    rows: NormRows<'_>,
) -> Result<(), GpuError> {
    let (_, width, _, _) = matrix(call.w)?;
    if !rows.form.is_row_norm() || call.y_first != 0 {
        return Err(GpuError::Shape(format!(
            "normed f16 rows of a GEMM's output: a {:?} form of its rows from column {} (an \
             RMSNorm of whole rows)",
            rows.form, call.y_first
        )));
    }
    let extra = Extra {
        formed: None,
        then: Some(&rows),
    };
    if gemm_with(gpu, rec, call, path, max_binding, extra)? {
        return Ok(());
    }
    let over_y = GemmCall {
        x: call.y,
        x_stride: call.y_stride,
        input: rows.form,
        norm: Some(rows.norm),
        residual: None,
        bias: None,
        ..call
    };
    form_f16_rows(
        gpu,
        rec,
        &over_y,
        width,
        rows.out,
        x16_norm_tokens(call.tokens),
    )
}

/// [`gemm()`] on input rows formed beforehand ([`gemm_norm_rows`]'s `out`): `call` names its
/// input as it is (X, its norm form and weights); where the GEMM runs on tensor cores with f16
/// input rows it reads `formed` instead of forming them, elsewhere it forms its input from
/// `call` as [`gemm()`] does.
pub fn gemm_f16_rows(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    call: GemmCall<'_>,
    tile: GemmTile,
    formed: &Tensor,
) -> Result<(), GpuError> {
    let (path, limit) = engine_path(gpu, &call, tile)?;
    let extra = Extra {
        formed: Some(formed),
        then: None,
    };
    gemm_with(gpu, rec, call, path, limit, extra).map(|_| ())
}

/// What a GEMM does beside its own work: read f16 input rows formed beforehand (`formed`), or
/// form the next GEMM's from its output where its split sum can (`then`).
#[derive(Clone, Copy, Default)]
struct Extra<'a> {
    formed: Option<&'a Tensor>,
    then: Option<&'a NormRows<'a>>,
}

/// A tensor-core variant in less workgroup memory where the knobs say so — its tiles in one
/// stage (`GPUPORT_COOP_STAGES=1`), its epilogue's staging blocks two (`GPUPORT_COOP_SLOTS=2`) —
/// for A/Bs of how much workgroup memory lets two workgroups share a core (v48: the 32-token
/// tile of 128 rows, 47 KiB in two stages, runs one workgroup a core on an H100; in one stage
/// it is 25 KiB, and a chunk takes a second barrier). Unset or any other value: `spec`.
fn coop_memory_knobs(mut spec: gpuport_kernels::KernelSpec) -> gpuport_kernels::KernelSpec {
    static STAGES: OnceLock<u32> = OnceLock::new();
    static SLOTS: OnceLock<u32> = OnceLock::new();
    let set =
        |spec: &gpuport_kernels::KernelSpec, name| spec.constants.iter().any(|(n, _)| *n == name);
    if knob(&STAGES, "GPUPORT_COOP_STAGES", 2) == 1 && !set(&spec, "STAGES") {
        spec.constants.push(("STAGES", 1));
    }
    // `GPUPORT_COOP_SLOTS=2`: the epilogue's subgroups in turns of two (1 KiB a staging
    // block less per further subgroup), the same A/B.
    if knob(&SLOTS, "GPUPORT_COOP_SLOTS", 0) == 2 && !set(&spec, "SLOTS") {
        spec.constants.push(("SLOTS", 2));
    }
    spec
}

/// Tokens a workgroup of the f16-input pass norms ([`form_f16_rows`] in the norm forms) for a
/// GEMM of `tokens` rows: one up to [`X16_ONE_TOKEN_ROWS`] rows (batched decode), else
/// [`X16_NORM_TOKENS`]; `GPUPORT_X16_NORM_TOKENS` sets it for every row count
/// ([`form_f16_rows`] keeps it within 1 to [`gemm::X16_NORM_TOKENS_MAX`]).
///
/// Why: at four tokens a workgroup a batch of 32 rows is eight workgroups, each thread walking
/// its share of four 4,096-wide rows; at one the same rows spread over 32 workgroups, a
/// quarter of the chain each. The same sums in the same order (the same bits: every stream's
/// ids digest equal). On an H100 (docs/performance.md, "v52", three interleaved rounds) 32 /
/// 64 streams of the 8B went 2,687–2,699 / 3,967–3,973 → 2,725–2,729 / 3,979–4,025 tok/s and
/// the 1B's 11,680 / 17,441 → 11,868 / 17,809. Prompts keep four: at 512 rows one token a
/// workgroup was ~2% slower (the 1B's prefill 37,141 / 39,483 → 36,622 / 38,109 tok/s).
pub fn x16_norm_tokens(tokens: usize) -> u32 {
    static NT: OnceLock<Option<u32>> = OnceLock::new();
    match knob_set(&NT, "GPUPORT_X16_NORM_TOKENS") {
        Some(set) => set,
        None if tokens <= X16_ONE_TOKEN_ROWS => 1,
        None => X16_NORM_TOKENS,
    }
}

/// Tokens a workgroup of the f16-input pass norms for prompts (more than
/// [`X16_ONE_TOKEN_ROWS`] rows): four (the sums of squares one vec4 a thread), as since v45.
pub const X16_NORM_TOKENS: u32 = 4;

/// Most rows at which [`x16_norm_tokens`] norms one token a workgroup: batched decode's
/// ([`COOP_SPLIT_DECODE_ROWS`]).
pub const X16_ONE_TOKEN_ROWS: usize = COOP_SPLIT_DECODE_ROWS;

/// Fewest tokens a GEMM runs on the tensor-core kernel where the device has it (below, the
/// few-row kernel): [`COOP_MIN_TOKENS`] by default; `GPUPORT_COOP_MIN_TOKENS` moves it (to
/// measure the crossover on an adapter).
pub fn coop_min_tokens() -> usize {
    static MIN: OnceLock<usize> = OnceLock::new();
    knob(&MIN, "GPUPORT_COOP_MIN_TOKENS", COOP_MIN_TOKENS)
}

/// The default of [`coop_min_tokens`]: a batch of 32 rows (32 streams decoding, a prompt's
/// chunk) runs on tensor cores. On the H200 (docs/performance.md, "v31") 32 streams decoded at
/// 6,848–6,860 tok/s (SmolLM2) and 6,840–6,904 (Gemma 3) from 32 rows against 5,171 and 6,361
/// through the float few-row kernel in the same call; from 8 rows, 8 streams fell from 3,225 to
/// 2,019 (SmolLM2). Int8 rows move from [`coop_min_q8_tokens`] (the same 32 by default).
pub const COOP_MIN_TOKENS: usize = 32;

/// Records one [`GemmCall`] (weights larger than one binding in row chunks) on the path
/// [`gemm_path`] chooses: the tensor-core kernel for prompts where the device has it, up to
/// [`gemm::FEW_ROWS_MAX`] tokens the few-row kernel, else the tiled one with `tile` (which
/// must be a valid tile either way).
pub fn gemm(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    call: GemmCall<'_>,
    tile: GemmTile,
) -> Result<(), GpuError> {
    let (path, limit) = engine_path(gpu, &call, tile)?;
    gemm_on(gpu, rec, call, path, limit)
}

/// The path [`gemm()`] takes for `call` ([`gemm_path`]; `tile`, checked, is the tiled
/// kernel's where that runs) and the adapter's largest binding.
fn engine_path(
    gpu: &Gpu,
    call: &GemmCall<'_>,
    tile: GemmTile,
) -> Result<(GemmPath, u64), GpuError> {
    check_tile(gpu, tile)?;
    let path = gemm_path(gpu, call, tile)?;
    Ok((path, gpu.limits().max_storage_buffer_binding_size))
}

/// [`gemm()`] on an explicit path, with an explicit largest weight binding (tests force row
/// chunks with a small one, and each kernel's variants).
pub fn gemm_on(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    call: GemmCall<'_>,
    path: GemmPath,
    max_binding: u64,
) -> Result<(), GpuError> {
    gemm_with(gpu, rec, call, path, max_binding, Extra::default()).map(|_| ())
}

/// [`gemm_on`] with `extra`'s work; returns whether it formed `extra.then`'s rows.
fn gemm_with(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    call: GemmCall<'_>,
    path: GemmPath,
    max_binding: u64,
    extra: Extra<'_>,
) -> Result<bool, GpuError> {
    let (ty, rows, cols, row_bytes) = matrix(call.w)?;
    check_call(&call, rows, cols)?;
    match path {
        GemmPath::Tiled(tile) => {
            check_tile(gpu, tile)?;
            // The grid's y dimension holds the token tiles.
            if call.tokens as u64 > u64::from(tile.tm) * u64::from(u16::MAX) {
                return Err(GpuError::Shape(format!(
                    "GEMM of {} tokens: more than {} tiles of {}",
                    call.tokens,
                    u16::MAX,
                    tile.tm
                )));
            }
        }
        GemmPath::FewRows(t) => check_few_rows(gpu, t, t.is_valid())?,
        GemmPath::Coop {
            tile,
            splits,
            x16,
            stream,
        } => {
            if x16 && !x16_fits(gpu, call.tokens, cols) {
                return Err(GpuError::Shape(format!(
                    "tensor-core GEMM of {} tokens × {cols} columns: their f16 input rows are \
                     more than one binding holds",
                    call.tokens
                )));
            }
            check_coop(gpu, ty, tile, call.tokens)?;
            let dims = (rows, cols, call.tokens);
            // (An empty GEMM records nothing, streamed or not.)
            if stream > 0 && rows > 0 && call.tokens > 0 {
                let slots = coop_stream_slots(tile, dims, stream);
                if slots != Some(splits)
                    || stream > gpu.limits().max_compute_workgroups_per_dimension
                {
                    return Err(GpuError::Shape(format!(
                        "tensor-core GEMM of {rows} rows × {cols} columns × {} tokens streamed \
                         by {stream} workgroups into {splits} slots: it takes {slots:?}",
                        call.tokens
                    )));
                }
            } else if !coop_split_fits(tile, dims, splits) {
                return Err(GpuError::Shape(format!(
                    "tensor-core GEMM of {rows} rows × {cols} columns × {} tokens split {splits} \
                     ways: 1 to the {} chunks of {} columns (at most {COOP_SPLITS_MAX}), and \
                     past 1 at most {COOP_SPLIT_SCRATCH_MAX} bytes of partials",
                    call.tokens,
                    cols.div_ceil(tile.kc as usize),
                    tile.kc,
                )));
            }
        }
        GemmPath::FewRowsQ8(t) => check_few_rows(gpu, t, t.is_valid_q8())?,
        GemmPath::TilesQ8 { tile, splits } => {
            if !tile.is_valid()
                || tile.threads() > gpu.limits().max_compute_invocations_per_workgroup
            {
                return Err(GpuError::Shape(format!(
                    "int8 tiled GEMM tile {tile:?}: not a variant of the kernel or this adapter"
                )));
            }
            let grid_y = (call.tokens as u64).div_ceil(u64::from(tile.tokens()));
            if grid_y > u64::from(gpu.limits().max_compute_workgroups_per_dimension) {
                return Err(GpuError::Shape(format!(
                    "GEMM of {} tokens: more token tiles of {} than the adapter's grid holds",
                    call.tokens,
                    tile.tokens()
                )));
            }
            if !q8_tile_split_fits(ty, (rows, cols, call.tokens), splits) {
                return Err(GpuError::Shape(format!(
                    "int8 tiled GEMM of {rows} rows × {cols} columns × {} tokens split {splits} \
                     ways: 1 to the {} units of {} columns (at most {COOP_SPLITS_MAX}), and past \
                     1 at most {COOP_SPLIT_SCRATCH_MAX} bytes of partials",
                    call.tokens,
                    cols.div_ceil(gemm::q8_unit_cols(ty)),
                    gemm::q8_unit_cols(ty),
                )));
            }
        }
    }
    if call.input.is_row_norm()
        && !matches!(
            path,
            GemmPath::FewRows(_) | GemmPath::Coop { x16: true, .. }
        )
    {
        return Err(GpuError::Shape(format!(
            "GEMM {path:?}: {:?} input (the norm forms run on the float few-row kernel and on \
             tensor cores with f16 input rows only)",
            call.input
        )));
    }
    let q8_path = path.reads_q8_blocks();
    if q8_path != (call.input == GemvInput::Q8Blocks) {
        return Err(GpuError::Shape(format!(
            "GEMM {path:?}: {:?} input (int8 blocks go with the int8 kernels, and only they)",
            call.input
        )));
    }
    if q8_path && !gpuport_kernels::gemv::takes_q8_input(ty) {
        return Err(GpuError::Shape(format!(
            "GEMM of {} weights: no int8-input kernel for the type",
            ty.name()
        )));
    }
    if rows == 0 || call.tokens == 0 {
        return Ok(false);
    }
    let m = Matrix {
        ty,
        rows,
        cols,
        row_bytes,
    };
    // The f16 input rows the tensor-core kernel reads, where it forms them here.
    let formed_here;
    let (call, pipeline, launch) = match path {
        GemmPath::Tiled(tile) => {
            let pipeline = gpu.pipeline(&gemm::spec(ty, tile, call.input))?;
            let launch = TiledLaunch {
                tiles: (tile.tn, tile.tm),
                x_again: 0,
                w_again: false,
                kc: 0,
                splits: 1,
                stream: 0,
            };
            (call, pipeline, launch)
        }
        GemmPath::Coop {
            tile,
            splits,
            x16,
            stream,
        } => {
            // X bound again as vec4s (binding 5) and as f16 quadruples (6), W as vec4s (7)
            // where the type's weights are read as vec4s.
            let launch = TiledLaunch {
                tiles: (tile.tn(), tile.tm()),
                x_again: 2,
                w_again: gpuport_kernels::source::coop_reads_vec4s(ty),
                kc: tile.kc,
                splits,
                stream,
            };
            if x16 {
                let formed = match extra.formed {
                    Some(f)
                        if f.bytes >= 2 * (call.tokens * cols) as u64
                            && !f.shares_buffer(call.y) =>
                    {
                        f
                    }
                    Some(f) => {
                        return Err(GpuError::Shape(format!(
                            "f16 input rows formed beforehand: {} bytes for {} tokens × {cols} \
                             columns, or the output's own buffer",
                            f.bytes, call.tokens
                        )));
                    }
                    None => {
                        formed_here = gpu.x16_scratch(call.tokens * cols)?;
                        form_f16_rows(
                            gpu,
                            rec,
                            &call,
                            cols,
                            &formed_here,
                            x16_norm_tokens(call.tokens),
                        )?;
                        &formed_here
                    }
                };
                let pipeline = gpu.pipeline(&coop_memory_knobs(gemm::coop_x16_spec(ty, tile)))?;
                let call = GemmCall {
                    x: formed,
                    x_stride: cols,
                    input: GemvInput::Plain,
                    norm: None,
                    ..call
                };
                (call, pipeline, launch)
            } else {
                let x_vec4 = call.x_stride.is_multiple_of(4);
                let spec = gemm::coop_spec(ty, tile, call.input, x_vec4);
                (call, gpu.pipeline(&coop_memory_knobs(spec))?, launch)
            }
        }
        GemmPath::FewRows(t) | GemmPath::FewRowsQ8(t) => {
            return few_rows(gpu, rec, &call, m, t, max_binding).map(|_| false);
        }
        GemmPath::TilesQ8 { tile, splits } => {
            let pipeline = gpu.pipeline(&gemm::tiles_q8_spec(ty, tile))?;
            let (tn, tm, kc) = q8_tile_shape(ty, tile);
            let launch = TiledLaunch {
                tiles: (tn, tm),
                x_again: 0,
                w_again: false,
                kc,
                splits,
                stream: 0,
            };
            // The int8 kernels count X in vec4s.
            let call = GemmCall {
                x_stride: call.x_stride / 4,
                ..call
            };
            (call, pipeline, launch)
        }
    };
    tiled(
        gpu,
        rec,
        &call,
        m,
        &pipeline,
        launch,
        max_binding,
        extra.then,
    )
}

/// A weight matrix's type and shape.
#[derive(Clone, Copy)]
struct Matrix {
    ty: GgmlType,
    rows: usize,
    cols: usize,
    row_bytes: usize,
}

fn check_call(call: &GemmCall<'_>, rows: usize, cols: usize) -> Result<(), GpuError> {
    let width = call.input.x_len(cols);
    let rows_of = |t: &Tensor, stride: usize| elems(t) / stride.max(1);
    let q8 = call.input == GemvInput::Q8Blocks;
    let normed = call.input.is_row_norm();
    let ok = (gemm::ROWS_INPUTS.contains(&call.input) || q8)
        && normed == call.norm.is_some()
        && call
            .norm
            .is_none_or(|(w, _)| elems(w) == cols && !call.y.shares_buffer(w))
        && (!q8 || (call.x_stride.is_multiple_of(4) && cols.is_multiple_of(32)))
        && call.x_stride >= width
        && call.y_stride >= call.y_first + rows
        && rows_of(call.x, call.x_stride) >= call.tokens
        && rows_of(call.y, call.y_stride) >= call.tokens
        && call.residual.is_none_or(|r| elems(r) == elems(call.y))
        && !call.y.shares_buffer(call.x)
        && call.residual.is_none_or(|r| !call.y.shares_buffer(r))
        && call.bias.is_none_or(|b| {
            call.residual.is_none() && elems(b) >= call.y_first + rows && !call.y.shares_buffer(b)
        });
    if ok {
        return Ok(());
    }
    Err(GpuError::Shape(format!(
        "GEMM [{rows}, {cols}] ({:?} input) of {} tokens: x {:?} (stride {}), y {:?} \
         (stride {}, from column {}), residual {:?}, bias {:?}, norm weights {:?}",
        call.input,
        call.tokens,
        call.x.shape,
        call.x_stride,
        call.y.shape,
        call.y_stride,
        call.y_first,
        call.residual.map(|r| &r.shape),
        call.bias.map(|b| &b.shape),
        call.norm.map(|(w, _)| &w.shape)
    )))
}

/// Whether a GEMM over `w` at `tokens` rows on float input forms an RMSNorm of its input rows
/// itself ([`GemvInput::RmsNorm`]): on the float few-row kernel (no tensor-core path at that
/// size, [`takes_coop_rows`]; at most [`gemm::FEW_ROWS_MAX`] rows), or on tensor cores with
/// f16 input rows, whose forming pass norms them ([`form_f16_rows`]); and `GPUPORT_GEMM_NORM`
/// not `0` (the A/B against a norm dispatch of its own).
pub fn takes_norm_rows(gpu: &Gpu, w: &Tensor, tokens: usize) -> bool {
    static OFF: OnceLock<bool> = OnceLock::new();
    let off = *OFF.get_or_init(|| std::env::var("GPUPORT_GEMM_NORM").is_ok_and(|v| v == "0"));
    if matrix(w).is_err() {
        return false;
    }
    let few_rows = !takes_coop_rows(gpu, tokens) && tokens <= gemm::FEW_ROWS_MAX;
    !off && (few_rows || reads_f16_rows(gpu, w, tokens))
}

/// Whether a GEMM over `w` at `tokens` rows on float input runs on tensor cores with f16 input
/// rows ([`GemmPath::Coop`] with `x16`: [`form_f16_rows`] forms them, or [`gemm_f16_rows`]
/// reads them formed).
pub fn reads_f16_rows(gpu: &Gpu, w: &Tensor, tokens: usize) -> bool {
    let Ok((ty, rows, cols, _)) = matrix(w) else {
        return false;
    };
    takes_coop_rows(gpu, tokens)
        && matches!(
            coop_path(gpu, ty, (rows, cols), tokens),
            Some(GemmPath::Coop { x16: true, .. })
        )
}

fn check_tile(gpu: &Gpu, tile: GemmTile) -> Result<(), GpuError> {
    let limits = gpu.limits();
    if !GemmTile::all().contains(&tile) {
        return Err(GpuError::Shape(format!(
            "GEMM tile {tile:?}: sides must be among {:?}",
            gemm::TILE_VALUES
        )));
    }
    if tile.workgroup_bytes() > limits.max_compute_workgroup_storage_size {
        return Err(GpuError::Shape(format!(
            "GEMM tile {tile:?} takes {} bytes of workgroup memory, the adapter allows {}",
            tile.workgroup_bytes(),
            limits.max_compute_workgroup_storage_size
        )));
    }
    Ok(())
}

/// `valid`: `t` names a variant of the kernel it is for.
fn check_few_rows(gpu: &Gpu, t: FewRowTunables, valid: bool) -> Result<(), GpuError> {
    if !valid || t.wg > gpu.limits().max_compute_invocations_per_workgroup {
        return Err(GpuError::Shape(format!(
            "few-row GEMM tunables {t:?}: not a variant of the kernel or this adapter"
        )));
    }
    Ok(())
}

/// The tensor-core tiles over weights of `ty` this device's threads and workgroup memory hold
/// (fetching as [`gemm::CoopFetch::DEFAULT`]; empty without [`Gpu::has_coop_f16`]).
pub fn coop_tiles(gpu: &Gpu, ty: GgmlType) -> Vec<CoopTile> {
    CoopTile::for_type(ty)
        .into_iter()
        .filter(|&t| coop_fits(gpu, ty, t))
        .collect()
}

/// Whether tile `t` over weights of `ty` is a variant this device runs (see [`coop_tiles`]).
fn coop_fits(gpu: &Gpu, ty: GgmlType, t: CoopTile) -> bool {
    let limits = gpu.limits();
    gpu.has_coop_f16()
        && t.takes(ty)
        && t.threads() <= limits.max_compute_invocations_per_workgroup
        && t.workgroup_bytes() <= limits.max_compute_workgroup_storage_size
}

fn check_coop(gpu: &Gpu, ty: GgmlType, t: CoopTile, tokens: usize) -> Result<(), GpuError> {
    let limits = gpu.limits();
    if !coop_fits(gpu, ty, t) {
        return Err(GpuError::Shape(format!(
            "tensor-core GEMM tile {t:?} over {} weights: not among this adapter's tiles {:?} \
             (none without f16 cooperative matrices)",
            ty.name(),
            coop_tiles(gpu, ty)
        )));
    }
    if tokens as u64 > u64::from(t.tm()) * u64::from(limits.max_compute_workgroups_per_dimension) {
        return Err(GpuError::Shape(format!(
            "GEMM of {tokens} tokens: more token tiles of {} than the adapter's grid holds",
            t.tm()
        )));
    }
    Ok(())
}

/// The residual mode of the uniform blocks: 1 residual, 2 bias, 0 neither.
fn residual_mode(call: &GemmCall<'_>) -> u32 {
    match (call.residual, call.bias) {
        (Some(_), _) => 1,
        (None, Some(_)) => 2,
        (None, None) => 0,
    }
}

/// How a tiled kernel is launched: `tiles` = (rows, tokens) per workgroup; `x_again`: X
/// bound that many times more after the residual (the tensor-core kernel's vec4 and f16
/// views); `splits` along K in chunks of `kc` columns (the tensor-core kernel; 1 and 0 for
/// the tiled one).
#[derive(Clone, Copy)]
struct TiledLaunch {
    tiles: (u32, u32),
    x_again: usize,
    /// The weights bound again after X's extra bindings (the tensor-core kernel's `w4`).
    w_again: bool,
    kc: u32,
    splits: u32,
    /// Workgroups of a streamed grid (the tensor-core kernel; 0: a grid of tiles).
    stream: u32,
}

/// The dispatches of a tiled kernel (`gemm.wgsl`, `gemm_coop.wgsl`: one uniform block, a grid
/// of `rows × tokens` tiles per weight chunk). Split along K, the grid's z holds the splits,
/// which write raw sums into the device's split scratch, and `gemm_splits.wgsl` adds them
/// (with the residual or bias) into Y — or, where `then` asks for normed f16 rows of Y and
/// the split sum covers whole rows with a residual, `gemm_x16.wgsl` SRC 1 adds them and forms
/// the rows (returns true).
#[allow(clippy::too_many_arguments)]
fn tiled(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    call: &GemmCall<'_>,
    m: Matrix,
    pipeline: &crate::pipeline::Pipeline,
    launch: TiledLaunch,
    max_binding: u64,
    then: Option<&NormRows<'_>>,
) -> Result<bool, GpuError> {
    let limits = gpu.limits();
    let (tn, tm) = launch.tiles;
    let chunks = weight_chunks(gpu, call.w, m.ty, m.rows, m.row_bytes, max_binding)?;
    let chunks_one = chunks.len() == 1;
    // A streamed grid's slots count the whole matrix's tiles: where the weights take several
    // bindings, a grid of tiles split by the rule instead.
    let launch = if launch.stream > 0 && !chunks_one {
        let dims = (m.rows, m.cols, call.tokens);
        TiledLaunch {
            splits: splits_for_target((tn, tm, launch.kc), dims, coop_split_target()),
            stream: 0,
            ..launch
        }
    } else {
        launch
    };
    let split = launch.splits > 1;
    let col_chunks = m.cols.div_ceil(launch.kc.max(1) as usize) as u32;
    let split_chunks = if split && launch.stream == 0 {
        col_chunks.div_ceil(launch.splits)
    } else {
        0
    };
    let mut formed = false;
    for (first, n, byte_offset, len) in chunks {
        let y_offset = (call.y_first + first as usize) as u32;
        let part_elems = n as usize * call.tokens;
        let scratch = if split {
            Some(gpu.split_scratch(launch.splits as usize * part_elems)?)
        } else {
            None
        };
        // Split, the kernel writes its raw sums densely into the scratch.
        let p = GemmParams {
            rows: n as u32,
            cols: m.cols as u32,
            tokens: call.tokens as u32,
            row_bytes: m.row_bytes as u32,
            w_offset: 0,
            x_offset: 0,
            x_stride: call.x_stride as u32,
            x_aux: m.cols as u32,
            y_offset: if split { 0 } else { y_offset },
            y_stride: if split {
                n as u32
            } else {
                call.y_stride as u32
            },
            residual: if split { 0 } else { residual_mode(call) },
            grid_x: launch.stream,
            split_chunks,
            split_stride: if split { part_elems as u32 } else { 0 },
            splits: launch.splits,
            eps: 0.0,
        };
        let grid = if launch.stream > 0 {
            (launch.stream, 1)
        } else {
            ((n as u32).div_ceil(tn), (call.tokens as u32).div_ceil(tm))
        };
        if grid.0 > limits.max_compute_workgroups_per_dimension {
            return Err(GpuError::Shape(format!(
                "GEMM of {n} rows needs {} row tiles, more than the adapter's {}",
                grid.0, limits.max_compute_workgroups_per_dimension
            )));
        }
        let slot = rec.uniform(&p)?;
        // The partials: only this call's part of the scratch (which may be larger).
        let part_bytes = 4 * (launch.splits as usize * part_elems) as u64;
        let y = match &scratch {
            Some(part) => (part, 0, part_bytes),
            None => whole(call.y),
        };
        let mut bindings = vec![
            (call.w, byte_offset, len),
            whole(call.x),
            y,
            whole(call.residual.or(call.bias).unwrap_or(call.x)),
        ];
        bindings.extend(std::iter::repeat_n(whole(call.x), launch.x_again));
        if launch.w_again {
            bindings.push((call.w, byte_offset, len));
        }
        let z = if split && launch.stream == 0 {
            launch.splits
        } else {
            1
        };
        rec.launch(pipeline, slot, &bindings, (grid.0, grid.1, z));
        let whole_rows = chunks_one && first == 0 && n as usize == m.rows;
        if let (Some(part), Some(r)) = (&scratch, then.filter(|_| whole_rows))
            && split_norm_rows(gpu, rec, call, &p, (part, part_bytes), r)?
        {
            formed = true;
            continue;
        }
        if let Some(part) = &scratch {
            // Four outputs a thread where they share a token row (the partials as vec4s).
            let vec4 = n.is_multiple_of(4);
            let sum = gpu.pipeline(&gemm::splits_spec(vec4))?;
            let threads = if vec4 { part_elems / 4 } else { part_elems };
            let groups = (threads as u32).div_ceil(gemm::SPLITS_WG);
            let grid = grid_2d(groups, limits.max_compute_workgroups_per_dimension);
            let p = GemmParams {
                y_offset,
                y_stride: call.y_stride as u32,
                residual: residual_mode(call),
                grid_x: grid.0,
                ..p
            };
            let slot = rec.uniform(&p)?;
            let bindings = [
                (part, 0, part_bytes),
                whole(call.y),
                match call.residual.or(call.bias) {
                    Some(r) => whole(r),
                    None => (part, 0, part_bytes),
                },
                (part, 0, part_bytes),
            ];
            rec.launch(&sum, slot, &bindings, (grid.0, grid.1, 1));
        }
    }
    Ok(formed)
}

/// The split sum of a GEMM over whole rows (`p`: the split kernel's uniform block; `part`: its
/// partials and their bytes) with its residual, and `rows`' normed f16 rows of the result, in
/// one pass (`gemm_x16.wgsl` SRC 1). Returns false, recording nothing, where that pass does
/// not apply: no residual, rows or strides not multiples of 4, or rows that do not fit
/// `rows.out`.
fn split_norm_rows(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    call: &GemmCall<'_>,
    p: &GemmParams,
    (part, part_bytes): (&Tensor, u64),
    rows: &NormRows<'_>,
) -> Result<bool, GpuError> {
    let (n, tokens) = (p.rows as usize, call.tokens);
    let nt = x16_norm_tokens(tokens).clamp(1, gemm::X16_NORM_TOKENS_MAX);
    let (Some(spec), Some(residual)) = (gemm::x16_split_spec(rows.form, nt), call.residual) else {
        return Ok(false);
    };
    let (weights, eps) = rows.norm;
    // Whole rows from column 0 (`gemm_norm_rows_on` holds y_first to 0).
    let applies = n.is_multiple_of(4)
        && call.y_stride.is_multiple_of(4)
        && elems(weights) == n
        && x16_fits(gpu, tokens, n)
        && rows.out.bytes >= 2 * (tokens * n) as u64
        && ![call.y, part].iter().any(|t| rows.out.shares_buffer(t));
    if !applies {
        return Ok(false);
    }
    let grid = grid_2d(
        (tokens as u32).div_ceil(nt),
        gpu.limits().max_compute_workgroups_per_dimension,
    );
    let p = GemmParams {
        cols: n as u32,
        x_stride: call.y_stride as u32,
        x_aux: n as u32,
        y_offset: call.y_first as u32,
        y_stride: call.y_stride as u32,
        residual: 1,
        grid_x: grid.0,
        eps,
        ..*p
    };
    let pipeline = gpu.pipeline(&spec)?;
    let slot = rec.uniform(&p)?;
    let part = (part, 0, part_bytes);
    let bindings = [
        part,
        whole(rows.out),
        part,
        whole(weights),
        part,
        whole(call.y),
        whole(residual),
    ];
    rec.launch(&pipeline, slot, &bindings, (grid.0, grid.1, 1));
    Ok(true)
}

/// The dispatches of the few-row kernels (`gemm_rows.wgsl`, or `gemm_rows_q8.wgsl` on int8
/// blocks): a 2D grid of workgroups of `t.rows` rows per weight chunk.
fn few_rows(
    gpu: &Gpu,
    rec: &mut Recorder<'_>,
    call: &GemmCall<'_>,
    m: Matrix,
    t: FewRowTunables,
    max_binding: u64,
) -> Result<(), GpuError> {
    let limits = gpu.limits();
    let q8 = call.input == GemvInput::Q8Blocks;
    let nx = t.pass_tokens(call.tokens, if q8 { gemm::NX_Q8_MAX } else { gemm::NX_MAX });
    // Rows of X start on vec4 boundaries (the GLU's second half too: `cols` is a multiple of
    // every unit, at least 4 elements) when the stride is a multiple of 4. The int8 kernel
    // counts X in vec4s.
    let x_vec4 = call.x_stride.is_multiple_of(4);
    let (spec, x_stride) = if q8 {
        (gemm::rows_q8_spec(m.ty, t, nx), call.x_stride / 4)
    } else {
        let spec = gemm::rows_spec(m.ty, t, call.input, nx, x_vec4);
        (spec, call.x_stride)
    };
    let pipeline = gpu.pipeline(&spec)?;
    let chunks = weight_chunks(gpu, call.w, m.ty, m.rows, m.row_bytes, max_binding)?;
    for (first, n, byte_offset, len) in chunks {
        let groups = (n as u32).div_ceil(t.rows);
        let grid = grid_2d(groups, limits.max_compute_workgroups_per_dimension);
        let p = GemmParams {
            rows: n as u32,
            cols: m.cols as u32,
            tokens: call.tokens as u32,
            row_bytes: m.row_bytes as u32,
            w_offset: 0,
            x_offset: 0,
            x_stride: x_stride as u32,
            x_aux: m.cols as u32,
            y_offset: (call.y_first + first as usize) as u32,
            y_stride: call.y_stride as u32,
            residual: residual_mode(call),
            grid_x: grid.0,
            split_chunks: 0,
            split_stride: 0,
            splits: 1,
            eps: call.norm.map_or(0.0, |(_, eps)| eps),
        };
        let slot = rec.uniform(&p)?;
        let mut bindings = vec![
            (call.w, byte_offset, len),
            whole(call.x),
            whole(call.y),
            whole(call.residual.or(call.bias).unwrap_or(call.x)),
        ];
        if !q8 {
            // X again as vec4s, then the norm weights (X again where there are none).
            bindings.push(whole(call.x));
            bindings.push(whole(call.norm.map_or(call.x, |(w, _)| w)));
        }
        rec.launch(&pipeline, slot, &bindings, (grid.0, grid.1, 1));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_input_norm_takes_one_token_a_workgroup_at_batched_decodes_rows() {
        if std::env::var_os("GPUPORT_X16_NORM_TOKENS").is_some() {
            return; // the knob overrides the rule
        }
        for tokens in [1, 8, 32, X16_ONE_TOKEN_ROWS] {
            assert_eq!(x16_norm_tokens(tokens), 1, "{tokens} rows");
        }
        for tokens in [X16_ONE_TOKEN_ROWS + 1, 128, 512] {
            assert_eq!(x16_norm_tokens(tokens), X16_NORM_TOKENS, "{tokens} rows");
        }
    }

    #[test]
    fn int8_rows_move_to_tensor_cores_per_type() {
        let rule = parse_q8_coop_rule("");
        assert_eq!(rule, (COOP_MIN_Q8_TOKENS, vec![]));
        let rule = parse_q8_coop_rule("48, q6_K=33,q4_K = 64");
        assert_eq!(rule, (48, vec![(GgmlType::Q6K, 33), (GgmlType::Q4K, 64)]));
        // Unknown types and counts that do not parse leave the default.
        let rule = parse_q8_coop_rule("q9_K=3,q6_K=x,many");
        assert_eq!(rule, (COOP_MIN_Q8_TOKENS, vec![]));
    }

    #[test]
    fn coop_tiles_narrow_until_the_grid_fills_the_gpu() {
        let t = |wm, wn| CoopTile {
            wm,
            wn,
            sub_tokens: 32,
            sub_rows: 64,
            kc: 32,
            fetch: coop_fetch(),
            decode: coop_decode(),
        };
        // Q6_K: chunks of 32 columns whatever `GPUPORT_COOP_KC` says.
        let tile = |rows, tokens| coop_tile(GgmlType::Q6K, rows, tokens);
        // 28,672 rows × 256 tokens: 224 row tiles of 128, times 2 token tiles.
        assert_eq!(tile(28_672, 256), t(4, 2));
        // 2,048 rows × 256 tokens: 16 × 2 = 32 tiles of 128 rows, 64 of 64.
        assert_eq!(tile(2048, 256), t(4, 1));
        assert_eq!(tile(2048, 512), t(4, 2));
        assert_eq!(tile(512, 100), t(4, 1));
        // 64 tokens or fewer: one token tile of 64, or of 32 (16 a subgroup) up to 32; by
        // default 32 rows a subgroup, twice the subgroups along the rows of the tile at 64
        // where a thread's share allows (Q6_K's 32-token tile in chunks of 32 does not: its
        // input share would be one quadruple), else the same subgroups.
        let half = coop_sub_rows() == 32;
        let rows_of = |wide: CoopTile, wn| {
            if half {
                CoopTile {
                    wn,
                    sub_rows: 32,
                    ..wide
                }
            } else {
                wide
            }
        };
        let wn4 = coop_half_rows_wn();
        assert_eq!(tile(65_536, 40), rows_of(t(2, 2), wn4));
        assert_eq!(tile(1024, 64), rows_of(t(2, 1), 2));
        let narrow = if coop_narrow_tokens() <= 20 { 16 } else { 32 };
        let narrow_tile = CoopTile {
            sub_tokens: narrow,
            ..t(2, 2)
        };
        let narrow_wn = if narrow == 16 { 2 } else { wn4 };
        assert_eq!(tile(65_536, 20), rows_of(narrow_tile, narrow_wn));
        // Q4_K in chunks of 64 takes the 32-token tile of 128 rows at 32 rows a subgroup.
        if half && coop_kc() == 64 && narrow == 16 {
            let q4 = coop_tile(GgmlType::Q4K, 28_672, 32);
            assert_eq!((q4.wn, q4.sub_rows, q4.kc, q4.tm()), (wn4, 32, 64, 32));
        }
        // Prompts keep 64 rows a subgroup.
        assert_eq!(coop_tile(GgmlType::Q4K, 28_672, 512).sub_rows, 64);
        for ty in GgmlType::ALL {
            for tokens in [1, 64, 65, 512] {
                for rows in [1, 64, 4096] {
                    let t = coop_tile(ty, rows, tokens);
                    assert!(t.takes(ty), "{ty:?} {rows} × {tokens}: {t:?}");
                    assert!(t.kc == 32 || t.kc == coop_kc() && gemm::coop_pairs(ty));
                }
            }
        }
    }

    /// The slots of a streamed grid against the runs laid out one by one: each tile's
    /// contributors counted from the runs' bounds, the most of them the slot count.
    #[test]
    fn streamed_slots_count_the_runs_a_tile_meets() {
        let t = |wn, sub_rows| CoopTile {
            wm: 2,
            wn,
            sub_tokens: 16,
            sub_rows,
            kc: 64,
            fetch: gemm::CoopFetch::DEFAULT,
            decode: gemm::CoopDecode::DEFAULT,
        };
        let laid_out = |tile: CoopTile, (rows, cols, tokens): (usize, usize, usize), g: u64| {
            let (tn, tm, kc) = coop_shape(tile);
            let per = cols.div_ceil(kc as usize) as u64;
            let tiles = (rows.div_ceil(tn as usize) * tokens.div_ceil(tm as usize)) as u64;
            let total = tiles * per;
            let mut meets = vec![0u64; tiles as usize];
            for w in 0..g {
                let (start, end) = (w * total / g, (w + 1) * total / g);
                let (first, last) = (start / per, end.saturating_sub(1) / per);
                if end > start {
                    (first..=last).for_each(|tile| meets[tile as usize] += 1);
                }
            }
            meets.into_iter().max().unwrap() as u32
        };
        // The Llama-8B's gate|up at 32 and 64 rows (224 and 448 tiles of 64 chunks), q|k|v
        // and attention output at 32 rows, on 132 workgroups; odd grids on small shapes.
        let cases = [
            (t(4, 32), (28_672, 4_096, 32), 132),
            (t(4, 32), (28_672, 4_096, 64), 132),
            (t(4, 32), (6_144, 4_096, 32), 132),
            (t(4, 32), (4_096, 4_096, 32), 132),
            (t(4, 32), (37, 512, 65), 13),
            (t(2, 64), (200, 512, 130), 7),
            (t(4, 32), (77, 512, 24), 3),
        ];
        for (tile, dims, g) in cases {
            let want = laid_out(tile, dims, g as u64);
            assert_eq!(
                coop_stream_slots(tile, dims, g),
                Some(want),
                "{dims:?} by {g}"
            );
        }
        // The run formula the kernel shares: every chunk in the run whose bounds hold it.
        for (total, g) in [
            (24u64, 13u64),
            (28_672, 132),
            (3_072, 132),
            (16, 16),
            (17, 16),
        ] {
            for w in 0..g {
                for x in w * total / g..(w + 1) * total / g {
                    assert_eq!(stream_run(x, total, g), w, "chunk {x} of {total} by {g}");
                }
            }
        }
        assert_eq!(
            coop_stream_slots(t(4, 32), (28_672, 4_096, 32), 132),
            Some(2)
        );
        // More workgroups than chunks, none, or more slots than a split may have: no stream.
        assert_eq!(coop_stream_slots(t(4, 32), (64, 128, 16), 3), None);
        assert_eq!(coop_stream_slots(t(4, 32), (4_096, 4_096, 32), 0), None);
        assert_eq!(coop_stream_slots(t(4, 32), (128, 4_096, 32), 60), None);
    }

    /// The residency rule behind the wave knob: the 47- and 28-KiB tiles one a core, the
    /// 19-KiB tile two (v50's measurements).
    #[test]
    fn tiles_a_core_follow_the_residency_rule() {
        let t = |wn, sub_rows, kc| CoopTile {
            wm: 2,
            wn,
            sub_tokens: 16,
            sub_rows,
            kc,
            fetch: gemm::CoopFetch::DEFAULT,
            decode: gemm::CoopDecode::DEFAULT,
        };
        // The 8B's batched-decode tiles at 32 rows: q|k|v and gate|up (128 rows in chunks
        // of 64), the attention output (64 rows in chunks of 64), Q6_K's down (64 rows in
        // chunks of 32).
        let shapes = [
            (GgmlType::Q4K, t(4, 32, 64), (6_144, 4_096), 1, 2),
            (GgmlType::Q4K, t(2, 32, 64), (4_096, 4_096), 1, 2),
            (GgmlType::Q6K, t(2, 32, 32), (4_096, 14_336), 2, 4),
        ];
        for (ty, tile, (rows, cols), a_core, splits) in shapes {
            assert_eq!(coop_tile(ty, rows, 32), tile, "{ty:?} {rows} rows");
            let bytes = tile.workgroup_bytes();
            assert_eq!(coop_tiles_a_core(tile), a_core, "{tile:?}: {bytes} B");
            // One wave of 132 cores: two splits where one workgroup fits a core, four for
            // the down projection's 64 tiles two a core.
            let target = 132 * coop_tiles_a_core(tile);
            let got = splits_for_target(coop_shape(tile), (rows, cols, 32), target);
            assert_eq!(got, splits, "{tile:?} over {rows} × {cols}");
        }
    }

    #[test]
    fn coop_splits_fill_the_grid_without_empty_splits() {
        let t = |wm, wn| CoopTile {
            wm,
            wn,
            sub_tokens: 32,
            sub_rows: 64,
            kc: 32,
            fetch: coop_fetch(),
            decode: coop_decode(),
        };
        // At the default target, whatever the environment says.
        let splits = |t, rows, cols, tokens| {
            splits_for_target(coop_shape(t), (rows, cols, tokens), COOP_SPLIT_TARGET)
        };
        // The Llama-8B shape's down projection at 32 tokens: 64 tiles of 64 rows, 448 chunks.
        assert_eq!(splits(t(2, 1), 4096, 14_336, 32), 4);
        // Batched decode's rows: q|k|v's 48 tiles in 5 splits (rounded down), gate|up's 224
        // tiles whole.
        if coop_decode_splits() {
            assert_eq!(splits(t(2, 2), 6144, 4096, 32), 5);
            assert_eq!(splits(t(2, 2), 28_672, 4096, 64), 1);
            assert_eq!(splits(t(2, 2), 16_384, 2048, 32), 1);
        }
        // Its gate|up at 512 tokens: 896 tiles already.
        assert_eq!(splits(t(4, 2), 28_672, 4096, 512), 1);
        // The attention output at 512 tokens: 128 tiles of 128 × 128, 2 splits of 64 chunks;
        // q|k|v: 192 tiles, 2 splits.
        assert_eq!(splits(t(4, 2), 4096, 4096, 512), 2);
        assert_eq!(splits(t(4, 2), 6144, 4096, 512), 2);
        // Few columns: at least 8 chunks a split.
        assert_eq!(splits(t(2, 1), 64, 512, 16), 2);
        assert_eq!(splits(t(2, 1), 64, 200, 16), 1);
        assert_eq!(splits(t(2, 1), 64, 0, 16), 1);
        for cols in [32, 100, 4096, 14_336, 100_000] {
            for rows in [1, 64, 4096] {
                for tokens in [1, 64, 512] {
                    let tile = t(2, 1);
                    let s = splits(tile, rows, cols, tokens) as usize;
                    let chunks = cols.div_ceil(32);
                    let per = chunks.div_ceil(s);
                    // Every split has a chunk: split s - 1 starts before the last one.
                    assert!((1..=COOP_SPLITS_MAX).contains(&s) && (s - 1) * per < chunks);
                }
            }
        }
    }
}
