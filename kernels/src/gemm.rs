//! GEMM with fused dequantization: `Y = X Wᵀ` for a batch of tokens, `W` a row-major GGUF
//! matrix (rows × cols), `X` and `Y` f32 token-major. Two kernels of one contract:
//! - the tiled GEMM (`gemm.wgsl`, [`spec`]) for prefill: each weight element is decoded once
//!   per tile of tokens, so prefill reads the weights `tokens / TM` times instead of `tokens`
//!   times (the decode GEMV once per token);
//! - the few-row GEMM (`gemm_rows.wgsl`, [`rows_spec`]) for batched decode, up to
//!   [`FEW_ROWS_MAX`] tokens: the GEMV's shape (many workgroups, lanes striding over weight
//!   steps, subgroup or shared-memory reductions), each decoded weight step multiplied into
//!   up to [`NX_MAX`] input rows;
//! - the tensor-core GEMM (`gemm_coop.wgsl`, [`coop_spec`]) for prefill on adapters with
//!   16 × 16 × 16 f16 cooperative matrices: the tiled GEMM's contract with the weight and input
//!   tiles rounded to f16 in workgroup memory and multiplied by subgroup matrix instructions.
//!
//! [`reference()`] is the CPU reference of both.

use bytemuck::{Pod, Zeroable};

use crate::gemv::GemvInput;
use crate::kernel::{Family, KernelSpec};
use crate::quant::GgmlType;

/// The uniform block of the GEMM kernels (`gemm_io.wgsl`: `gemm.wgsl`, `gemm_rows.wgsl`,
/// `gemm_coop.wgsl`; field meanings there).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct GemmParams {
    /// Rows of W (output columns).
    pub rows: u32,
    /// Columns of W (the reduction length).
    pub cols: u32,
    /// Tokens (rows of X and Y).
    pub tokens: u32,
    /// Bytes per row of W.
    pub row_bytes: u32,
    /// Byte offset of row 0 in the weight binding (a multiple of 1,680 for Q6_K, whose
    /// groups the kernels count from the binding's start: `quant::gpu_layout`).
    pub w_offset: u32,
    /// Element offset of `X[0, 0]`.
    pub x_offset: u32,
    /// Elements between consecutive tokens of X.
    pub x_stride: u32,
    /// The GLU inputs: element offset of the second operand after the first.
    pub x_aux: u32,
    /// Element offset of `Y[0, 0]` (and of the residual's).
    pub y_offset: u32,
    /// Elements between consecutive tokens of Y.
    pub y_stride: u32,
    /// 1: add the residual binding; 2: add the bias row.
    pub residual: u32,
    /// The few-row kernels and the split sums: workgroups along x (their grids are 2D past
    /// the per-dimension limit). The tensor-core kernel: the workgroups of a streamed grid,
    /// which share out every tile's chunks in equal runs (`gemm_coop.wgsl`; 0: a grid of
    /// tiles). 0 for the other tiled kernels.
    pub grid_x: u32,
    /// The tensor-core kernel split along K: chunks of columns per split (0: not split; each
    /// workgroup `z` then writes its split's raw sums `split_stride` elements past split
    /// `z - 1`'s, for [`splits_spec`]).
    pub split_chunks: u32,
    /// Elements between consecutive splits' partial sums.
    pub split_stride: u32,
    /// [`splits_spec`]: partials to add.
    pub splits: u32,
    /// The few-row kernel's norm input forms ([`ROWS_INPUTS`]): the norm's epsilon (also
    /// keeps the block a multiple of 16 bytes).
    pub eps: f32,
}

/// Tokens × rows of one workgroup's output tile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GemmTile {
    /// Tokens per tile.
    pub tm: u32,
    /// Weight rows per tile.
    pub tn: u32,
}

/// Allowed tile sides (the 16 × 16 threads each own a (tm / 16) × (tn / 16) block).
pub const TILE_VALUES: [u32; 3] = [16, 32, 64];

impl GemmTile {
    /// The default tile: 32 tokens × 64 rows.
    pub const DEFAULT: GemmTile = GemmTile { tm: 32, tn: 64 };

    /// Bytes of workgroup memory the tile takes (the weight and input tiles, rows padded by
    /// one float): the 64 × 64 tile needs 16,896, over WebGPU's default 16,384.
    pub fn workgroup_bytes(self) -> u32 {
        (self.tm + self.tn) * (KC + 1) * 4
    }

    /// Every allowed tile.
    pub fn all() -> Vec<GemmTile> {
        TILE_VALUES
            .into_iter()
            .flat_map(|tm| TILE_VALUES.map(|tn| GemmTile { tm, tn }))
            .collect()
    }
}

/// Columns per reduction chunk (`KC` in `gemm.wgsl`).
pub const KC: u32 = 32;

/// Input forms the GEMM applies while loading X: plain and the two GLUs.
pub const INPUTS: [GemvInput; 3] = [GemvInput::Plain, GemvInput::SwiGlu, GemvInput::GeGlu];

/// The input forms of the few-row kernel (`gemm_rows.wgsl`): [`INPUTS`] and the RMSNorm of
/// each row (weights `w` or `1 + w`), the norm a batch's input projections would otherwise
/// take in a dispatch of its own.
pub const ROWS_INPUTS: [GemvInput; 5] = [
    GemvInput::Plain,
    GemvInput::RmsNorm,
    GemvInput::RmsNormPlusOne,
    GemvInput::SwiGlu,
    GemvInput::GeGlu,
];

/// The variant for weights of `ty`, tile `t`, input form `input` (one of [`INPUTS`]).
pub fn spec(ty: GgmlType, t: GemmTile, input: GemvInput) -> KernelSpec {
    let mut constants = vec![("TM", t.tm), ("TN", t.tn)];
    if input != GemvInput::Plain {
        constants.push(("XFORM", input.code()));
    }
    KernelSpec {
        family: Family::Gemm,
        quant: Some(ty),
        reduction: None,
        constants,
    }
}

/// CPU reference: `Y[t] = W X[t]` for each token row of `x` (`cols` elements each), the GLU
/// forms applied to rows of `2 cols`, accumulated in f64 like [`crate::gemv::reference`].
pub fn reference(
    ty: GgmlType,
    w: &[u8],
    rows: usize,
    cols: usize,
    x: &[f32],
    input: GemvInput,
) -> Vec<f32> {
    let width = input.x_len(cols);
    x.chunks(width)
        .flat_map(|row| {
            let xin = input.reference(row, &[], &[], 0.0, cols);
            crate::gemv::reference(ty, w, rows, cols, &xin[..cols])
        })
        .collect()
}

/// The tile of the tensor-core GEMM: `wm × wn` subgroups of 32 lanes, each owning
/// `sub_tokens` (32 or 16) tokens × `sub_rows` (64 or 32) rows of the output as 16 × 16
/// accumulator fragments (two to eight); the tiles are held in workgroup memory once or twice
/// ([`CoopTile::stages`]: a software pipeline, `gemm_coop.wgsl`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CoopTile {
    /// Subgroups along the tokens: one of [`COOP_WM`].
    pub wm: u32,
    /// Subgroups along the weight rows: one of [`COOP_WN`] (of [`COOP_WN_HALF_ROWS`] at 32 rows
    /// a subgroup).
    pub wn: u32,
    /// Tokens per subgroup: 32 (two 16-token fragments), or 16 for the 32-token tile of
    /// batches of up to 32 rows ([`COOP_SUB_TOKENS`]; `TF` in the kernel).
    pub sub_tokens: u32,
    /// Weight rows per subgroup: 64 (four 16-row fragments), or 32 ([`COOP_SUB_ROWS`]; `RF`
    /// in the kernel): half the accumulators and half a thread's share of a chunk, so more
    /// subgroups (and workgroups) share a core where batched decode's tiles are latency-bound.
    pub sub_rows: u32,
    /// Columns per reduction chunk (one barrier each): one of [`COOP_KC`].
    pub kc: u32,
    /// How threads fetch a chunk's weights, for types with a run form ([`coop_runs`]; the
    /// others always fetch [`CoopFetch::Steps`]).
    pub fetch: CoopFetch,
    /// How the weights' integers become floats, for the types that take either way
    /// ([`coop_bits`]; the others always convert: [`CoopDecode::Convert`]).
    pub decode: CoopDecode,
}

/// How the tensor-core GEMM turns the integers of weights of [`coop_bits`] types into floats
/// (`gemm_coop.wgsl`'s `small_f32`, INT_BITS): the same values either way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CoopDecode {
    /// By conversion instructions (INT_BITS 0), which NVIDIA runs on its conversion units at
    /// a quarter of the arithmetic's rate or less.
    Convert,
    /// Through their bits (INT_BITS 1): `n | 0x4B000000` is the f32 2^23 + n, less 2^23 — an
    /// OR and a subtraction at the arithmetic's full rate.
    Bits,
}

impl CoopDecode {
    /// Both, in the order `GPUPORT_COOP_DECODE` numbers them (0, 1: their discriminants).
    pub const ALL: [CoopDecode; 2] = [CoopDecode::Convert, CoopDecode::Bits];

    /// The decode of every tile of [`CoopTile::all`]: conversions. Through the bits measured
    /// level on an H100 (docs/performance.md, "v39": Q4_K GEMMs 1–2% slower, Q6_K 1–2%
    /// faster; 64 streams of the 8B 2,799.7 against 2,786.4 tok/s), so the conversions do not
    /// bound the kernel; kept for A/Bs (`GPUPORT_COOP_DECODE=1`).
    pub const DEFAULT: CoopDecode = CoopDecode::Convert;
}

/// How the tensor-core GEMM's threads fetch a chunk's weights (`gemm_coop.wgsl`, RUN and
/// DEPTH).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CoopFetch {
    /// A step at a time, decoded when fetched (RUN 0).
    Steps,
    /// Each thread a run of consecutive steps of one tile row, its words loaded before the
    /// multiplies and decoded after them (RUN 1).
    Runs,
    /// Runs, the next two chunks in flight instead of one (RUN 1, DEPTH 2). Slower than
    /// [`CoopFetch::Runs`] on an H100 in v38 on most shapes (8B gate|up 234.5 → 254.0 µs in
    /// chunks of 32, 221.5 → 213.4 in chunks of 64; 1B down 58.3 → 63.9), its 64 streams no
    /// faster, while its second chunk's half sat in a branch; branch-free since v48 (past the
    /// last chunk it multiplies zeros). For A/Bs (`GPUPORT_COOP_FETCH=2`).
    RunsAhead,
}

impl CoopFetch {
    /// Every way, in the order `GPUPORT_COOP_FETCH` numbers them (0, 1, 2: their discriminants).
    pub const ALL: [CoopFetch; 3] = [CoopFetch::Steps, CoopFetch::Runs, CoopFetch::RunsAhead];

    /// The way every tile of [`CoopTile::all`] fetches: runs, one chunk ahead (v37 on an
    /// H100: the Llama shapes' GEMMs at 64 rows 1.24–1.61× faster than a step at a time).
    pub const DEFAULT: CoopFetch = CoopFetch::Runs;
}

/// Allowed subgroups along the tokens of a [`CoopTile`] (with one, a thread's share of a chunk
/// would outgrow the registers the kernel gives it).
pub const COOP_WM: [u32; 2] = [2, 4];

/// Allowed subgroups along the weight rows of a [`CoopTile`] of 64 rows a subgroup (at 32
/// rows a subgroup: [`COOP_WN_HALF_ROWS`]).
pub const COOP_WN: [u32; 2] = [1, 2];

/// Allowed subgroups along the weight rows of a [`CoopTile`] of 32 rows a subgroup: 64 or 128
/// rows a tile, the rows [`COOP_WN`] gives at 64 rows a subgroup with twice the subgroups, or
/// 256 (16 subgroups, 512 threads: the most a workgroup of one stage holds, for the
/// latency-bound decode GEMMs whose 128-row tile runs one workgroup a core).
pub const COOP_WN_HALF_ROWS: [u32; 3] = [2, 4, 8];

/// Allowed weight rows per subgroup of a [`CoopTile`]: 64 (four row fragments), and 32.
pub const COOP_SUB_ROWS: [u32; 2] = [64, 32];

/// Allowed tokens per subgroup of a [`CoopTile`]: 32, and 16 at two subgroups along the tokens
/// (the 32-token tile: at 32 rows a 64-token tile's second half multiplies zeros).
pub const COOP_SUB_TOKENS: [u32; 2] = [32, 16];

/// Allowed columns per chunk of a [`CoopTile`]: 32 for every type; 64 where a chunk is a pair
/// of sub-blocks fetched in runs ([`coop_pairs`]), at the tiles of two or four subgroups along
/// the rows (at one a thread's share of a 64-column chunk would outgrow the kernel's named
/// registers). See [`CoopTile::for_type`].
pub const COOP_KC: [u32; 2] = [32, 64];

/// Workgroup memory the tensor-core tiles are laid out for: 48 KiB, what NVIDIA's Vulkan
/// driver gives a workgroup (and the most any adapter with cooperative matrices has shown).
pub const COOP_WORKGROUP_BYTES: u32 = 48 * 1024;

/// Bytes of one of the epilogue's 16 × 16 f32 staging blocks.
pub const COOP_STAGING_BYTES: u32 = 16 * 16 * 4;

/// Lanes per subgroup the tensor-core GEMM is written for (its subgroup layout and the 16 × 16
/// fragments' lane mapping assume it).
pub const COOP_SUBGROUP: u32 = 32;

impl CoopTile {
    /// The default: 4 × 2 subgroups, 128 tokens × 128 rows, 256 threads, chunks of 32 columns
    /// (48 KiB of workgroup memory).
    pub const DEFAULT: CoopTile = CoopTile {
        wm: 4,
        wn: 2,
        sub_tokens: 32,
        sub_rows: 64,
        kc: 32,
        fetch: CoopFetch::DEFAULT,
        decode: CoopDecode::DEFAULT,
    };

    /// Tokens per tile.
    pub fn tm(self) -> u32 {
        self.sub_tokens * self.wm
    }

    /// Weight rows per tile.
    pub fn tn(self) -> u32 {
        self.sub_rows * self.wn
    }

    /// Threads per workgroup.
    pub fn threads(self) -> u32 {
        COOP_SUBGROUP * self.wm * self.wn
    }

    /// Stages of the tiles in workgroup memory (`gemm_coop.wgsl`, STAGES): two wherever they
    /// fit [`COOP_WORKGROUP_BYTES`] beside two staging blocks ([`CoopTile::staging_slots`]),
    /// else one. Chunks of 32 columns take two up to 128 rows × 128 tokens; of 64, the tiles
    /// of 64 rows do (the 32-token one of 128 rows too, its epilogue two subgroups at a time),
    /// the 64- and 128-token tiles of 128 rows (55 KiB and more in two stages) and the tiles of
    /// 256 rows one.
    pub fn stages(self) -> u32 {
        if self.tile_bytes(2) + 2 * COOP_STAGING_BYTES <= COOP_WORKGROUP_BYTES {
            2
        } else {
            1
        }
    }

    /// 16 × 16 f32 staging blocks of the epilogue (`gemm_coop.wgsl`, SLOTS): one per subgroup
    /// where they fit beside the tiles in their stages, else two (the subgroups storing their
    /// fragments in turns of two).
    pub fn staging_slots(self) -> u32 {
        let subgroups = self.wm * self.wn;
        if self.tile_bytes(self.stages()) + subgroups * COOP_STAGING_BYTES <= COOP_WORKGROUP_BYTES {
            subgroups
        } else {
            2
        }
    }

    /// Bytes of the f16 weight and input tiles over `stages` stages (rows of `kc + 8` halves).
    fn tile_bytes(self, stages: u32) -> u32 {
        stages * (self.tm() + self.tn()) * (self.kc + 8) * 2
    }

    /// Bytes of workgroup memory: the tiles once per stage and the staging blocks.
    pub fn workgroup_bytes(self) -> u32 {
        self.tile_bytes(self.stages()) + self.staging_slots() * COOP_STAGING_BYTES
    }

    /// Every tile of chunks of 32 columns, which every type takes (fetching as
    /// [`CoopFetch::DEFAULT`]): 32 tokens a subgroup at every [`COOP_WM`] × [`COOP_WN`], the
    /// 32-token tiles (16 a subgroup, two along the tokens), and both at 32 rows a subgroup
    /// ([`COOP_WN_HALF_ROWS`], two along the tokens) where a thread's shares fit the kernel
    /// (`shares_fit`).
    pub fn all() -> Vec<CoopTile> {
        CoopTile::at_columns(32)
    }

    /// Every tile weights of `ty` take (fetching as [`CoopFetch::DEFAULT`]): [`CoopTile::all`],
    /// and where [`coop_pairs`] holds the two-subgroups-wide tiles in chunks of 64 columns (at
    /// 32 rows a subgroup: the tiles of two subgroups along the tokens).
    pub fn for_type(ty: GgmlType) -> Vec<CoopTile> {
        let mut out = CoopTile::all();
        if coop_pairs(ty) {
            out.extend(
                CoopTile::at_columns(64)
                    .into_iter()
                    .filter(|t| t.threads() >= 128),
            );
        }
        out
    }

    /// The tiles of chunks of `kc` columns, before [`CoopTile::for_type`]'s choice among them.
    fn at_columns(kc: u32) -> Vec<CoopTile> {
        let tile = |wm, wn, sub_tokens, sub_rows| CoopTile {
            wm,
            wn,
            sub_tokens,
            sub_rows,
            kc,
            fetch: CoopFetch::DEFAULT,
            decode: CoopDecode::DEFAULT,
        };
        let mut out = Vec::new();
        for wm in COOP_WM {
            out.extend(COOP_WN.map(|wn| tile(wm, wn, 32, 64)));
        }
        out.extend(COOP_WN.map(|wn| tile(2, wn, 16, 64)));
        for wn in COOP_WN_HALF_ROWS {
            out.extend(COOP_SUB_TOKENS.map(|sub_tokens| tile(2, wn, sub_tokens, 32)));
        }
        out.retain(|t| t.shares_fit());
        out
    }

    /// Input quadruples (f16 or f32 vec4s) a thread fetches of each chunk (`gemm_coop.wgsl`,
    /// NXS).
    pub fn input_quads(self) -> u32 {
        self.tm() * self.kc / 4 / self.threads()
    }

    /// Whether a thread's share of a chunk is what the kernel's named registers hold: 1, 2, 4
    /// or 8 input quadruples, and 4 or 8 weight steps of 4 values at 32 columns a chunk (2 or
    /// 4 of 4 + 4 for the types that take 8 a step), a run of 4 or 8 Q4_K words (two steps
    /// each) at 64. (One input quadruple: only the 32-token tile of 128 rows in chunks of 32,
    /// 27-33 KiB in two stages.)
    fn shares_fit(self) -> bool {
        let steps = self.tn() * self.kc / 4 / self.threads();
        let runs: &[u32] = if self.kc == 32 { &[4, 8] } else { &[8, 16] };
        [1, 2, 4, 8].contains(&self.input_quads()) && runs.contains(&steps)
    }

    /// The ways this tile may fetch weights: every way at 32 columns a chunk (for the types
    /// without a run form the field is ignored: they fetch a step at a time), the run ways at
    /// 64 (a step at a time is written for one sub-block a chunk).
    pub fn fetches(self) -> Vec<CoopFetch> {
        CoopFetch::ALL
            .into_iter()
            .filter(|&f| self.kc == 32 || f != CoopFetch::Steps)
            .collect()
    }

    /// Whether weights of `ty` may take this tile, its fetch included (either decode: the
    /// types outside [`coop_bits`] ignore it).
    pub fn takes(self, ty: GgmlType) -> bool {
        let base = CoopTile {
            fetch: CoopFetch::DEFAULT,
            decode: CoopDecode::DEFAULT,
            ..self
        };
        CoopTile::for_type(ty).contains(&base) && self.fetches().contains(&self.fetch)
    }
}

/// The tensor-core variant for weights of `ty`, tile `t`, input form `input` (one of
/// [`INPUTS`]); `x_vec4`: the input rows start at multiples of 4 elements (vec4 loads).
pub fn coop_spec(ty: GgmlType, t: CoopTile, input: GemvInput, x_vec4: bool) -> KernelSpec {
    let mut constants = vec![("WM", t.wm), ("WN", t.wn), ("KC", t.kc)];
    if t.sub_tokens == 16 {
        constants.push(("TF", 1));
    }
    if t.sub_rows == 32 {
        constants.push(("RF", 2));
    }
    if t.stages() == 1 {
        constants.push(("STAGES", 1));
    }
    if t.staging_slots() < t.wm * t.wn {
        constants.push(("SLOTS", t.staging_slots()));
    }
    if coop_runs(ty) {
        match t.fetch {
            CoopFetch::Steps => constants.push(("RUN", 0)),
            CoopFetch::Runs => {}
            CoopFetch::RunsAhead => constants.push(("DEPTH", 2)),
        }
    }
    if coop_bits(ty) && t.decode == CoopDecode::Bits {
        constants.push(("INT_BITS", 1));
    }
    if input != GemvInput::Plain {
        constants.push(("XFORM", input.code()));
    }
    if !x_vec4 {
        constants.push(("XV4", 0));
    }
    KernelSpec {
        family: Family::GemmCoop,
        quant: Some(ty),
        reduction: None,
        constants,
    }
}

/// Whether the tensor-core GEMM has a run form for weights of `ty` ([`CoopFetch::Runs`]):
/// Q4_K (the block head and whole quant words) and Q6_K (the run's low- and high-bit words,
/// its scale word and d).
pub fn coop_runs(ty: GgmlType) -> bool {
    matches!(ty, GgmlType::Q4K | GgmlType::Q6K)
}

/// Whether the tensor-core GEMM may turn the integers of weights of `ty` into floats through
/// their bits ([`CoopDecode::Bits`]): Q4_K and Q6_K, whose snippets take `small_f32`.
pub fn coop_bits(ty: GgmlType) -> bool {
    matches!(ty, GgmlType::Q4K | GgmlType::Q6K)
}

/// Whether the tensor-core GEMM's run form for weights of `ty` takes chunks of 64 columns: a
/// pair of sub-blocks whose elements share quant words (Q4_K: 2j in the low nibbles, 2j + 1 in
/// the high), so a run's loads bring twice the weights.
pub fn coop_pairs(ty: GgmlType) -> bool {
    ty == GgmlType::Q4K
}

/// The tensor-core variant for weights of `ty` and tile `t` that reads its input formed and
/// rounded to f16 beforehand ([`x16_spec`]; XH 1 in `gemm_coop.wgsl`).
pub fn coop_x16_spec(ty: GgmlType, t: CoopTile) -> KernelSpec {
    let mut spec = coop_spec(ty, t, GemvInput::Plain, true);
    spec.constants.push(("XH", 1));
    spec
}

/// Threads per workgroup of [`x16_spec`].
pub const X16_WG: u32 = 256;

/// The tensor-core GEMM's input rows formed (`input`, one of [`X16_INPUTS`]) and rounded to
/// f16 once (`gemm_x16.wgsl`, the values [`coop_spec`]'s kernel forms itself; the norm forms
/// as the float few-row kernel forms them); `x_vec4`: X's rows start at multiples of 4
/// elements.
///
/// The norm forms ([`GemvInput::RmsNorm`], [`GemvInput::RmsNormPlusOne`]) take `norm_tokens`
/// tokens a workgroup (1 to [`X16_NORM_TOKENS_MAX`]; the others ignore it).
pub fn x16_spec(input: GemvInput, x_vec4: bool, norm_tokens: u32) -> KernelSpec {
    let mut constants = vec![("WG", X16_WG)];
    if input != GemvInput::Plain {
        constants.push(("XFORM", input.code()));
    }
    if input.is_row_norm() {
        constants.push(("NT", norm_tokens.clamp(1, X16_NORM_TOKENS_MAX)));
    }
    if !x_vec4 {
        constants.push(("XV4", 0));
    }
    KernelSpec {
        family: Family::GemmInputF16,
        quant: None,
        // The norm forms' sums of squares (`wg_total`) through workgroup memory: one tree a
        // workgroup of four tokens, on every adapter.
        reduction: Some(crate::Reduction::Shared),
        constants,
    }
}

/// [`x16_spec`]'s norm form `input` ([`GemvInput::RmsNorm`] or [`GemvInput::RmsNormPlusOne`])
/// over rows that are a split GEMM's partials plus its residual, which it also writes out
/// (`gemm_x16.wgsl` SRC 1: `gemm_splits.wgsl`'s sum and the f16 pass in one dispatch, the
/// same bits as both); `None` for the other forms.
pub fn x16_split_spec(input: GemvInput, norm_tokens: u32) -> Option<KernelSpec> {
    if !input.is_row_norm() {
        return None;
    }
    let mut spec = x16_spec(input, true, norm_tokens);
    spec.constants.push(("SRC", 1));
    Some(spec)
}

/// Most tokens a workgroup of [`x16_spec`] forms in the norm forms ([`GemvInput::RmsNorm`],
/// [`GemvInput::RmsNormPlusOne`]: their sums of squares are one vec4); the other forms take
/// one invocation per four values.
pub const X16_NORM_TOKENS_MAX: u32 = 4;

/// The input forms [`x16_spec`] takes: [`INPUTS`] and the two RMSNorms.
pub const X16_INPUTS: [GemvInput; 5] = [
    GemvInput::Plain,
    GemvInput::SwiGlu,
    GemvInput::GeGlu,
    GemvInput::RmsNorm,
    GemvInput::RmsNormPlusOne,
];

/// The tensor-core variants [`crate::all_specs`] validates for weights of `ty`: every tile with
/// plain vec4 input and with f16 input ([`coop_x16_spec`]), and every input form at the
/// default tile in both load widths.
pub fn coop_specs(ty: GgmlType) -> Vec<KernelSpec> {
    let mut out: Vec<KernelSpec> = CoopTile::all()
        .into_iter()
        .flat_map(|t| {
            [
                coop_spec(ty, t, GemvInput::Plain, true),
                coop_x16_spec(ty, t),
            ]
        })
        .collect();
    if coop_runs(ty) {
        for t in CoopTile::for_type(ty) {
            for fetch in t.fetches() {
                for decode in CoopDecode::ALL {
                    let t = CoopTile { fetch, decode, ..t };
                    if t.kc > 32 || fetch != CoopFetch::DEFAULT || decode != CoopDecode::DEFAULT {
                        out.push(coop_x16_spec(ty, t));
                    }
                }
            }
        }
    }
    if coop_bits(ty) {
        let t = CoopTile {
            decode: CoopDecode::Bits,
            ..CoopTile::DEFAULT
        };
        out.push(coop_spec(ty, t, GemvInput::SwiGlu, true));
    }
    for input in INPUTS {
        out.push(coop_spec(ty, CoopTile::DEFAULT, input, false));
        if input != GemvInput::Plain {
            out.push(coop_spec(ty, CoopTile::DEFAULT, input, true));
        }
    }
    out
}

/// Threads per workgroup of [`splits_spec`].
pub const SPLITS_WG: u32 = 256;

/// The second step of a tensor-core GEMM split along K (`gemm_splits.wgsl`): adds the splits'
/// partial sums in split order, then the residual or bias, into Y; `vec4`: four outputs a
/// thread, the partials read as vec4s (for a multiple of 4 rows).
pub fn splits_spec(vec4: bool) -> KernelSpec {
    KernelSpec {
        family: Family::GemmSplits,
        quant: None,
        reduction: None,
        constants: vec![("WG", SPLITS_WG), ("V4", u32::from(vec4))],
    }
}

/// Most tokens a GEMM runs through the few-row kernel (`gemm_rows.wgsl`) instead of the tiled
/// one: batched decode's rows, for which the tiled grid has too few workgroups and too many
/// barriers. Measured on the H200 end to end (`bench-llm --parallel`, docs/performance.md
/// v15): with 64 rather than 8, aggregate decode at 32 streams rose 2.2–2.7× and at 64 streams
/// 1.4–1.9× on all four layouts (passes of 8 tokens re-reading a workgroup's rows from cache
/// still beat the tiled GEMM's tiles at these counts). Prompts (hundreds of rows) keep the
/// tiled kernel. A tuning entry may move it per adapter.
pub const FEW_ROWS_MAX: usize = 64;

/// Threads a few-row GEMM should have on a GPU ([`FewRowTunables::for_matrix`]): a default,
/// half of what a large GPU holds resident (an H200: 132 cores × 2048 threads).
pub const TARGET_THREADS: usize = 1 << 17;

/// Rows per thread of the int8 few-row kernel's default variant from 32 rows (`runtime`'s
/// `ops::q8_rows_rule`; [`FewRowTunables::for_q8_matrix`]). On the H200 at 32 tokens
/// (docs/performance.md, "v35") four rows a thread beat two at the same lanes per row on every
/// Llama-1B/8B projection but the 1B's q|k|v (8B q|k|v 63.0 against 72.0 µs, attention output 46.2 against 50.7, 1B
/// gate|up 63.7 against 78.3, down 52.2 against 55.7).
pub const Q8_ROWS_RPT: u32 = 4;

/// Threads the int8 few-row kernel's default variant aims for on a GPU from 32 rows
/// (`ops::q8_rows_rule`; [`FewRowTunables::for_q8_matrix`]): about 20k. In the same sweep
/// (v35) the fastest four-row variant of each Llama projection had 25–33k threads, the lanes
/// per row that reach this; the rule before it (two rows a thread, [`TARGET_THREADS`]) gave 49–131k
/// threads and took 1.1–1.5× as long on the 1B gate|up and the 8B q|k|v and attention output.
pub const Q8_TARGET_THREADS: usize = 20_480;

/// Lanes per row group the few-row kernels' default variants start from before doubling
/// toward their target of threads (the int8 kernel's `Q8RowsRule::first_lanes` where it asks
/// for no more, or a row has too few units for more).
pub const FEW_ROWS_FIRST_LANES: u32 = 8;

/// How the int8 few-row kernel's default variant is shaped for one call
/// ([`FewRowTunables::for_q8_matrix`]; the runtime's `ops::q8_rows_rule` chooses it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Q8RowsRule {
    /// Rows per thread (1-4).
    pub rpt: u32,
    /// Threads the matrix should have: lanes per row group double toward it (0: never).
    pub threads: usize,
    /// Lanes per row group before any doubling, on matrices with at least as many units a
    /// row (fewer: [`FEW_ROWS_FIRST_LANES`]).
    pub first_lanes: u32,
}

/// Most tokens per pass of the few-row kernel (`NX`): two vec4 accumulators per row.
pub const NX_MAX: u32 = 8;

/// Most tokens per pass of the int8 few-row kernel (`gemm_rows_q8.wgsl`): four vec4
/// accumulators per row.
pub const NX_Q8_MAX: u32 = 16;

/// The tunables of one few-row GEMM variant (besides the tokens per pass, which the launcher
/// takes from the call: see [`FewRowTunables::pass_tokens`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FewRowTunables {
    /// Threads per workgroup.
    pub wg: u32,
    /// Rows per workgroup.
    pub rows: u32,
    /// Rows per thread (each input value a lane loads serves this many rows).
    pub rpt: u32,
    /// Most tokens per pass (1..=[`NX_MAX`]; the int8 kernel 1..=[`NX_Q8_MAX`]): each decoded
    /// weight step serves this many.
    pub nx: u32,
    /// How a row's partial sums are reduced.
    pub reduction: crate::Reduction,
}

/// Allowed threads per workgroup (the reduce snippets hold 256 lanes).
pub const FEW_WG_VALUES: [u32; 4] = [32, 64, 128, 256];
/// Allowed rows per workgroup.
pub const FEW_ROWS_VALUES: [u32; 6] = [1, 2, 4, 8, 16, 32];
/// Allowed rows per thread (named accumulators for up to 4).
pub const FEW_RPT_VALUES: [u32; 3] = [1, 2, 4];

impl FewRowTunables {
    /// A type's default, subgroups when available, before the matrix's shape is known (the
    /// base [`FewRowTunables::for_matrix`] reshapes): 128 threads as 4 row groups of 32 lanes
    /// (the GEMV's default: a warp's lanes read consecutive steps), two rows per thread (each
    /// input value a lane loads serves two rows), 8 tokens per pass (every call up to
    /// [`FEW_ROWS_MAX`] reads its weights once). The K-quants decode a sub-block's scales per
    /// step and row, and F32/F16 load 16 weight bytes per step: one row per thread keeps their
    /// registers per lane like the small-block types'.
    pub fn default_for(ty: GgmlType, subgroups: bool) -> Self {
        let reduction = if subgroups {
            crate::Reduction::Subgroup
        } else {
            crate::Reduction::Shared
        };
        let rpt = match ty {
            GgmlType::Q4K | GgmlType::Q5K | GgmlType::Q6K | GgmlType::F32 | GgmlType::F16 => 1,
            _ => 2,
        };
        FewRowTunables {
            wg: 128,
            rows: 4 * rpt,
            rpt,
            nx: NX_MAX,
            reduction,
        }
    }

    /// Whether these tunables name a variant of the kernel: values from the allowed lists,
    /// rows per thread at most rows per workgroup, at most one row group per thread, and 1 to
    /// [`NX_MAX`] tokens per pass.
    pub fn is_valid(self) -> bool {
        self.fits(NX_MAX)
    }

    /// [`FewRowTunables::is_valid`] for the int8 kernel: 1 to [`NX_Q8_MAX`] tokens per pass.
    pub fn is_valid_q8(self) -> bool {
        self.fits(NX_Q8_MAX)
    }

    fn fits(self, nx_max: u32) -> bool {
        FEW_WG_VALUES.contains(&self.wg)
            && FEW_ROWS_VALUES.contains(&self.rows)
            && FEW_RPT_VALUES.contains(&self.rpt)
            && self.rpt <= self.rows
            && self.rows / self.rpt <= self.wg
            && (1..=nx_max).contains(&self.nx)
    }

    /// Every valid combination at [`NX_MAX`] tokens per pass.
    pub fn all() -> Vec<FewRowTunables> {
        let mut out = Vec::new();
        for reduction in crate::Reduction::ALL {
            for wg in FEW_WG_VALUES {
                for rows in FEW_ROWS_VALUES {
                    for rpt in FEW_RPT_VALUES {
                        let t = FewRowTunables {
                            wg,
                            rows,
                            rpt,
                            nx: NX_MAX,
                            reduction,
                        };
                        if t.is_valid() {
                            out.push(t);
                        }
                    }
                }
            }
        }
        out
    }

    /// Lanes that share a group of rows (`T` in the WGSL).
    pub fn lanes_per_group(self) -> u32 {
        self.wg * self.rpt / self.rows
    }

    /// The default for a `rows × cols` matrix of `ty` with input form `input`: the type's
    /// default ([`FewRowTunables::default_for`]) reshaped for the matrix, by what the H200
    /// measured (docs/design/few-row-gemm.md):
    /// - GLU inputs take 4 rows per thread: each row group forms its input values again
    ///   (a SwiGLU's exp or a GeGLU's tanh per value and token), so 4 rows per group form them
    ///   a quarter as often (a 4096 × 14336 Q6_K down projection at 8 tokens: 368 → 194 µs);
    ///   the norm inputs (v36) too, for the same reason (a multiply by `1 / rms · w` per value
    ///   and token; not measured on the H200 apart);
    /// - lanes per row group start at 8 and double, up to 256 and while a lane keeps more than
    ///   one step of a row, until the matrix has `target_threads` threads: few lanes per row
    ///   on a tall matrix (a warp then spans several row groups that read the same input
    ///   values, one cache load serving them all, and each lane's many steps amortize the
    ///   reduction: Gemma 3's 262,144-row output at 8 tokens 358 → 241 µs with 8 lanes
    ///   instead of 32), many on a short one (enough threads to cover the GPU);
    /// - 128 threads per workgroup (256 for 256 lanes), at most 32 rows.
    ///
    /// `target_threads` is a default for the adapter's class ([`TARGET_THREADS`] on a GPU; 1
    /// on a CPU adapter, which runs a few workgroups at a time: 8 lanes per row there).
    pub fn for_matrix(
        ty: GgmlType,
        rows: usize,
        cols: usize,
        input: GemvInput,
        subgroups: bool,
        target_threads: usize,
    ) -> Self {
        let base = FewRowTunables::default_for(ty, subgroups);
        let rpt = if input == GemvInput::Plain {
            base.rpt
        } else {
            4
        };
        let steps = cols / crate::source::step_elems(ty);
        base.spread(rows, (rpt, FEW_ROWS_FIRST_LANES), target_threads, |lanes| {
            2 * lanes < steps
        })
    }

    /// The default for a `rows × cols` matrix of `ty` (one of the types
    /// [`crate::gemv::takes_q8_input`] accepts) on int8 input (`gemm_rows_q8.wgsl`) under
    /// `rule` (the runtime's `ops::q8_rows_rule` gives it per call): `rule.rpt` rows per thread
    /// (each token's input blocks, loaded once, serve them all) and lanes per row group from
    /// `rule.first_lanes` where a row has a unit for each (else from
    /// [`FEW_ROWS_FIRST_LANES`]), doubled while the matrix has fewer than `rule.threads`
    /// threads and every thread keeps at least 8 (row, unit) pairs, units of 32 or 64
    /// elements.
    pub fn for_q8_matrix(
        ty: GgmlType,
        rows: usize,
        cols: usize,
        subgroups: bool,
        rule: Q8RowsRule,
    ) -> Self {
        let base = FewRowTunables::default_for(ty, subgroups);
        let units = cols / q8_unit_cols(ty);
        let rpt = rule.rpt.clamp(1, 4);
        let first_lanes = if units >= rule.first_lanes as usize {
            rule.first_lanes
        } else {
            FEW_ROWS_FIRST_LANES
        };
        base.spread(rows, (rpt, first_lanes), rule.threads, |lanes| {
            8 * lanes <= units * rpt as usize
        })
    }

    /// `self` with `rpt` rows per thread and lanes per row group from `first_lanes`, doubled
    /// up to 256 while the matrix has fewer than `target_threads` threads and
    /// `may_double(lanes)`; 128 threads per workgroup (256 for 256 lanes), at most 32 rows.
    fn spread(
        self,
        rows: usize,
        (rpt, first_lanes): (u32, u32),
        target_threads: usize,
        may_double: impl Fn(usize) -> bool,
    ) -> Self {
        let groups = rows.div_ceil(rpt as usize);
        let mut lanes = first_lanes.clamp(1, 256).next_power_of_two();
        while lanes < 256
            && groups * (lanes as usize) < target_threads
            && may_double(lanes as usize)
        {
            lanes *= 2;
        }
        FewRowTunables { rpt, ..self }.with_lanes(lanes)
    }

    /// `self` with `lanes` lanes per row group (rounded to a power of two in 1..=256) at its
    /// rows per thread: 128 threads per workgroup (256 for 256 lanes), at most 32 rows — the
    /// shape the defaults give a lane count (the runtime's `GPUPORT_ROWS_LANES` and
    /// `GPUPORT_Q8_ROWS_LANES` force one for A/Bs).
    pub fn with_lanes(self, lanes: u32) -> Self {
        let lanes = lanes.clamp(1, 256).next_power_of_two();
        let rpt = self.rpt.clamp(1, 4);
        let per_wg = (128 / lanes).max(1);
        let rows_wg = (per_wg * rpt).min(32);
        FewRowTunables {
            wg: rows_wg / rpt * lanes,
            rows: rows_wg,
            rpt,
            ..self
        }
    }

    /// Tokens per pass for a call of `tokens` tokens: the passes at most `nx` tokens each
    /// require, evened out (9 tokens at 8 per pass run as 5 + 4, not 8 + 1), at most `nx_max`
    /// (the kernel's: [`NX_MAX`], or [`NX_Q8_MAX`] for the int8 one).
    pub fn pass_tokens(self, tokens: usize, nx_max: u32) -> u32 {
        let nx = self.nx.clamp(1, nx_max) as usize;
        let passes = tokens.div_ceil(nx).max(1);
        tokens.div_ceil(passes).clamp(1, nx) as u32
    }
}

/// The few-row variant for weights of `ty` at tunables `t` with `nx` tokens per pass (which
/// replaces `t.nx`), input form `input` (one of [`ROWS_INPUTS`]); `x_vec4`: the input rows start at
/// multiples of 4 elements, read as vec4s (else four scalar loads per step and token).
pub fn rows_spec(
    ty: GgmlType,
    t: FewRowTunables,
    input: GemvInput,
    nx: u32,
    x_vec4: bool,
) -> KernelSpec {
    let mut constants = vec![("WG", t.wg), ("ROWS", t.rows), ("RPT", t.rpt), ("NX", nx)];
    if input != GemvInput::Plain {
        constants.push(("XFORM", input.code()));
    }
    if !x_vec4 {
        constants.push(("XV4", 0));
    }
    KernelSpec {
        family: Family::GemmRows,
        quant: Some(ty),
        reduction: Some(t.reduction),
        constants,
    }
}

/// Elements of one unit of the int8 few-row kernel (a `q8dot` snippet's `UNIT_COLS`): a block
/// of the 32-element types, 64 of the K-quants' 256.
pub fn q8_unit_cols(ty: GgmlType) -> usize {
    match ty {
        GgmlType::Q4K | GgmlType::Q5K | GgmlType::Q6K => 64,
        _ => 32,
    }
}

/// The int8 few-row variant (`gemm_rows_q8.wgsl`) for weights of `ty` (one of the types
/// [`crate::gemv::takes_q8_input`] accepts) at tunables `t` with `nx` tokens per pass.
pub fn rows_q8_spec(ty: GgmlType, t: FewRowTunables, nx: u32) -> KernelSpec {
    KernelSpec {
        family: Family::GemmRowsQ8,
        quant: Some(ty),
        reduction: Some(t.reduction),
        constants: vec![("WG", t.wg), ("ROWS", t.rows), ("RPT", t.rpt), ("NX", nx)],
    }
}

/// The int8 few-row variants [`crate::all_specs`] validates for weights of `ty`: 1, 2 and 4
/// rows per thread at every pass width to [`NX_MAX`] and the widths that open and fill the
/// third and fourth quads (9, 12, 13, 16), both reductions, and the extremes of lanes per row
/// group (1 and 256).
pub fn rows_q8_specs(ty: GgmlType) -> Vec<KernelSpec> {
    let mut out = Vec::new();
    for reduction in crate::Reduction::ALL {
        for rpt in FEW_RPT_VALUES {
            for nx in (1..=NX_MAX).chain([9, 12, 13, NX_Q8_MAX]) {
                let t = FewRowTunables {
                    wg: 128,
                    rows: 4 * rpt,
                    rpt,
                    nx,
                    reduction,
                };
                out.push(rows_q8_spec(ty, t, nx));
            }
        }
        for (wg, rows, rpt) in [(32, 32, 1), (256, 1, 1)] {
            let t = FewRowTunables {
                wg,
                rows,
                rpt,
                nx: NX_MAX,
                reduction,
            };
            out.push(rows_q8_spec(ty, t, NX_MAX));
        }
    }
    out
}

/// The tunables of the int8 tiled GEMM (`gemm_tiles_q8.wgsl`, [`tiles_q8_spec`]): a
/// workgroup of `rg × tg` threads owns `rg · rpt` weight rows × `tg · nx` tokens, each thread
/// `rpt` rows (`rg` apart) × `nx` tokens of the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Q8Tile {
    /// Threads along the weight rows (a multiple of the subgroup size, so a subgroup's lanes
    /// share their tokens and each input load is one address): one of [`Q8_TILE_RG`].
    pub rg: u32,
    /// Threads along the tokens: one of [`Q8_TILE_TG`].
    pub tg: u32,
    /// Rows per thread: one of [`FEW_RPT_VALUES`].
    pub rpt: u32,
    /// Tokens per thread: 1 to [`NX_Q8_MAX`].
    pub nx: u32,
}

/// Allowed threads along the rows of a [`Q8Tile`].
pub const Q8_TILE_RG: [u32; 4] = [8, 16, 32, 64];

/// Allowed threads along the tokens of a [`Q8Tile`].
pub const Q8_TILE_TG: [u32; 4] = [1, 2, 4, 8];

/// Most threads in a workgroup of the int8 tiled GEMM (WebGPU's default limit).
pub const Q8_TILE_THREADS_MAX: u32 = 256;

impl Q8Tile {
    /// Weight rows per workgroup.
    pub fn rows(self) -> u32 {
        self.rg * self.rpt
    }

    /// Tokens per workgroup.
    pub fn tokens(self) -> u32 {
        self.tg * self.nx
    }

    /// Threads per workgroup.
    pub fn threads(self) -> u32 {
        self.rg * self.tg
    }

    /// Whether this names a variant of the kernel: values from the allowed lists, at most
    /// [`Q8_TILE_THREADS_MAX`] threads, 1 to [`NX_Q8_MAX`] tokens per thread.
    pub fn is_valid(self) -> bool {
        Q8_TILE_RG.contains(&self.rg)
            && Q8_TILE_TG.contains(&self.tg)
            && FEW_RPT_VALUES.contains(&self.rpt)
            && (1..=NX_Q8_MAX).contains(&self.nx)
            && self.threads() <= Q8_TILE_THREADS_MAX
    }

    /// The default for a call of `tokens` rows with `rg` threads along the weight rows (the
    /// adapter's subgroup size, at least 8, at most 64): 4 rows per thread; token groups
    /// doubled up to 8 (and [`Q8_TILE_THREADS_MAX`] threads) while a thread would hold more
    /// than 8 tokens, so that the rows of one workgroup serve every token of a decode batch of
    /// up to 64 from the cache; then the tokens per thread rounded up to a power of two (at
    /// most 8, or [`NX_Q8_MAX`] where fewer groups fit): 20 tokens run as 4 groups of 8, the
    /// last 12 clamped. A batched engine's row counts vary from step to step, and every
    /// distinct tile is a pipeline to compile: seven per type this way, twenty when the tokens
    /// were evened out exactly (which grew a CPU adapter's server by 61 MiB of compiled code
    /// over four rounds of 64 streams, `openai_suite.py`'s load test).
    pub fn for_tokens(tokens: usize, rg: u32) -> Q8Tile {
        let rg = rg.clamp(8, 64).next_power_of_two();
        let tg_max = (Q8_TILE_THREADS_MAX / rg).min(8);
        let mut tg = 1u32;
        while tg < tg_max && tokens > (8 * tg) as usize {
            tg *= 2;
        }
        let most = 8 * (8 / tg_max) as usize;
        let nx = tokens
            .div_ceil(tg as usize)
            .clamp(1, most)
            .next_power_of_two()
            .min(most) as u32;
        Q8Tile { rg, tg, rpt: 4, nx }
    }
}

/// The int8 tiled variant (`gemm_tiles_q8.wgsl`) for weights of `ty` (one of the types
/// [`crate::gemv::takes_q8_input`] accepts) at tile `t`.
pub fn tiles_q8_spec(ty: GgmlType, t: Q8Tile) -> KernelSpec {
    KernelSpec {
        family: Family::GemmTilesQ8,
        quant: Some(ty),
        reduction: None,
        constants: vec![("RG", t.rg), ("TG", t.tg), ("RPT", t.rpt), ("NX", t.nx)],
    }
}

/// The int8 tiled variants [`crate::all_specs`] validates for weights of `ty`: every rows per
/// thread at the token counts that open and fill each quad (1, 4, 5, 8, 9, 12, 13, 16) at 32
/// × 1 threads, and every thread layout at 4 rows × 8 tokens.
pub fn tiles_q8_specs(ty: GgmlType) -> Vec<KernelSpec> {
    let mut out = Vec::new();
    for rpt in FEW_RPT_VALUES {
        for nx in [1, 4, 5, 8, 9, 12, 13, NX_Q8_MAX] {
            out.push(tiles_q8_spec(
                ty,
                Q8Tile {
                    rg: 32,
                    tg: 1,
                    rpt,
                    nx,
                },
            ));
        }
    }
    for rg in Q8_TILE_RG {
        for tg in Q8_TILE_TG {
            let t = Q8Tile {
                rg,
                tg,
                rpt: 4,
                nx: 8,
            };
            if t.is_valid() && (rg, tg) != (32, 1) {
                out.push(tiles_q8_spec(ty, t));
            }
        }
    }
    out
}

/// The few-row variants [`crate::all_specs`] validates for weights of `ty`: every tunable
/// combination at [`NX_MAX`], every pass width at the defaults of both reductions, and the norm
/// and GLU inputs and the scalar-input form at the defaults.
pub fn rows_specs(ty: GgmlType) -> Vec<KernelSpec> {
    let mut out: Vec<KernelSpec> = FewRowTunables::all()
        .into_iter()
        .map(|t| rows_spec(ty, t, GemvInput::Plain, NX_MAX, true))
        .collect();
    for sg in [false, true] {
        let t = FewRowTunables::default_for(ty, sg);
        for nx in 1..NX_MAX {
            out.push(rows_spec(ty, t, GemvInput::Plain, nx, true));
        }
        for input in ROWS_INPUTS {
            for nx in [3, NX_MAX] {
                out.push(rows_spec(ty, t, input, nx, false));
                if input != GemvInput::Plain {
                    out.push(rows_spec(ty, t, input, nx, true));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coop_tiles_fit_and_every_type_validates() {
        for t in CoopTile::for_type(GgmlType::Q4K) {
            assert!(t.threads() <= 512, "{t:?}");
            // A thread's share of a chunk fits the kernel's named registers: 2, 4 or 8 weight
            // steps of 4 values (at most 4 of 4 + 4), or at 64 columns a run of 4 or 8
            // Q4_K words (two steps each); 1, 2, 4 or 8 input vec4s.
            let steps = t.tn() * t.kc / 4 / t.threads();
            if t.kc == 32 {
                assert!(
                    [2, 4, 8].contains(&steps) && [2, 4].contains(&(steps / 2)),
                    "{t:?}"
                );
            } else {
                assert!([4, 8].contains(&(steps / 2)), "{t:?}");
                assert!(!t.takes(GgmlType::Q6K) && !t.takes(GgmlType::Q8_0), "{t:?}");
                assert!(
                    !CoopTile {
                        fetch: CoopFetch::Steps,
                        ..t
                    }
                    .takes(GgmlType::Q4K)
                );
            }
            assert!(t.takes(GgmlType::Q4K), "{t:?}");
            // One input quadruple only at eight subgroups or more.
            assert!([1, 2, 4, 8].contains(&t.input_quads()), "{t:?}");
            assert!(t.input_quads() > 1 || t.threads() >= 256, "{t:?}");
            assert!(t.workgroup_bytes() <= COOP_WORKGROUP_BYTES, "{t:?}");
            // One stage only where two would pass 48 KiB: 64-column tiles of 64 tokens or
            // more against 128 rows, and every tile of 256 rows.
            let one_stage = (t.kc == 64 && t.tm() > 32 && t.tn() == 128) || t.tn() == 256;
            assert_eq!(t.stages() == 1, one_stage, "{t:?}");
            // Two staging blocks only where one a subgroup would not fit beside the tiles.
            let subgroups = t.wm * t.wn;
            let all_fit =
                t.tile_bytes(t.stages()) + subgroups * COOP_STAGING_BYTES <= COOP_WORKGROUP_BYTES;
            let slots = if all_fit { subgroups } else { 2 };
            assert_eq!(t.staging_slots(), slots, "{t:?}");
        }
        assert_eq!(CoopTile::DEFAULT.workgroup_bytes(), COOP_WORKGROUP_BYTES);
        for ty in GgmlType::ALL {
            let spec = coop_spec(ty, CoopTile::DEFAULT, GemvInput::SwiGlu, false);
            assert!(spec.needs_cooperative_matrix() && spec.needs_subgroups());
            let (words, _) = crate::validate::validate(&spec).unwrap_or_else(|e| panic!("{e}"));
            assert!(words > 0);
        }
    }

    #[test]
    fn q8_tiles_cover_decode_batches_and_validate() {
        // (tokens, subgroup size) → (threads along rows, token groups, tokens per thread).
        let cases = [
            (1, 32, (32, 1, 1)),
            (8, 32, (32, 1, 8)),
            (3, 32, (32, 1, 4)),
            (9, 32, (32, 2, 8)),
            (20, 32, (32, 4, 8)),
            (32, 32, (32, 4, 8)),
            (64, 32, (32, 8, 8)),
            (512, 32, (32, 8, 8)),
            (64, 4, (8, 8, 8)),
            (64, 128, (64, 4, 16)),
        ];
        for (tokens, sg, want) in cases {
            let t = Q8Tile::for_tokens(tokens, sg);
            assert!(t.is_valid(), "{tokens} {sg}: {t:?}");
            assert_eq!(
                (t.rg, t.tg, t.nx),
                want,
                "{tokens} tokens, subgroups of {sg}"
            );
            // Up to 64 tokens, one workgroup's rows serve every token.
            assert!(tokens > 64 || t.tokens() as usize >= tokens, "{t:?}");
        }
        // Seven tiles for every row count of a batch.
        let tiles: std::collections::BTreeSet<Q8Tile> =
            (1..=64).map(|n| Q8Tile::for_tokens(n, 32)).collect();
        assert_eq!(tiles.len(), 7, "{tiles:?}");
        // Too many threads, rows per thread off the list, too many tokens per thread.
        for (rg, tg, rpt, nx) in [(64, 8, 1, 1), (32, 1, 3, 1), (32, 1, 1, 17)] {
            assert!(!Q8Tile { rg, tg, rpt, nx }.is_valid());
        }
        for ty in GgmlType::ALL
            .into_iter()
            .filter(|&t| crate::gemv::takes_q8_input(t))
        {
            let specs = tiles_q8_specs(ty);
            let v = crate::validate::Validated::new(&specs[0]).unwrap_or_else(|e| panic!("{e}"));
            for spec in &specs {
                v.translate(spec)
                    .unwrap_or_else(|e| panic!("{}: {e}", spec.label()));
            }
        }
    }

    #[test]
    fn few_row_defaults_are_variants_and_passes_even_out() {
        for ty in GgmlType::ALL {
            for sg in [false, true] {
                let t = FewRowTunables::default_for(ty, sg);
                assert!(t.is_valid(), "{ty:?} {t:?}");
                assert_eq!(t.nx, NX_MAX, "passes of NX_MAX tokens");
                assert_eq!(t.lanes_per_group(), 32, "{ty:?}");
                assert!(FewRowTunables::all().contains(&t));
            }
        }
        assert!(FewRowTunables::all().iter().all(|t| t.is_valid()));
        let t = FewRowTunables::default_for(GgmlType::Q4_0, true);
        let passes: Vec<u32> = (1..=17).map(|n| t.pass_tokens(n, NX_MAX)).collect();
        assert_eq!(passes, [1, 2, 3, 4, 5, 6, 7, 8, 5, 5, 6, 6, 7, 7, 8, 8, 6]);
        let t3 = FewRowTunables { nx: 3, ..t };
        assert_eq!(t3.pass_tokens(7, NX_MAX), 3);
        assert_eq!(t3.pass_tokens(0, NX_MAX), 1);
        // The int8 kernel's passes of up to 16: 32 rows in two, 37 as 13 + 13 + 11.
        let t16 = FewRowTunables { nx: NX_Q8_MAX, ..t };
        assert!(t16.is_valid_q8() && !t16.is_valid());
        assert_eq!(
            [32, 37, 64].map(|n| t16.pass_tokens(n, NX_Q8_MAX)),
            [16, 13, 16]
        );
        // The float kernel's passes stay within its 8.
        assert_eq!(t16.pass_tokens(32, NX_MAX), 8);
        // (type, rows, cols, input) → (threads, rows, rows per thread) on a GPU.
        let shaped = [
            // Tall: 8 lanes per row, 16 row groups per workgroup.
            (GgmlType::Q8_0, 262_144, 640, GemvInput::Plain, (128, 32, 2)),
            // GLU inputs: 4 rows per thread; 1024 groups of 128 lanes.
            (GgmlType::Q6K, 4096, 14_336, GemvInput::SwiGlu, (128, 4, 4)),
            // Short: 256 lanes (a row's 512 steps allow them).
            (GgmlType::Q4K, 640, 2048, GemvInput::GeGlu, (256, 4, 4)),
            // 80 steps a row: at most 64 lanes (more than one step each); 256 steps: 128.
            (GgmlType::Q5_0, 1024, 640, GemvInput::Plain, (128, 4, 2)),
            (GgmlType::Q4K, 640, 1024, GemvInput::Plain, (128, 1, 1)),
            (GgmlType::F16, 2048, 2048, GemvInput::Plain, (128, 2, 1)),
        ];
        for (ty, rows, cols, input, want) in shaped {
            let t = FewRowTunables::for_matrix(ty, rows, cols, input, true, TARGET_THREADS);
            assert!(t.is_valid(), "{ty:?} {t:?}");
            assert_eq!((t.wg, t.rows, t.rpt), want, "{ty:?} {rows}x{cols}");
            // A CPU adapter: 8 lanes per row whatever the shape.
            let cpu = FewRowTunables::for_matrix(ty, rows, cols, input, false, 1);
            assert!(cpu.is_valid() && cpu.lanes_per_group() == 8, "{cpu:?}");
        }
        // Every type and form on tiny and huge matrices gives a variant.
        for ty in GgmlType::ALL {
            for input in INPUTS {
                for (rows, cols) in [(1, 256), (3, 32 * 8), (1 << 20, 256 * 64)] {
                    for target in [1, TARGET_THREADS] {
                        let t = FewRowTunables::for_matrix(ty, rows, cols, input, true, target);
                        assert!(t.is_valid(), "{ty:?} {rows}x{cols} {t:?}");
                    }
                }
            }
        }
        let spec = rows_spec(GgmlType::Q5_0, t, GemvInput::GeGlu, 5, false);
        assert_eq!(
            spec.label(),
            "gemm_rows.q5_0.subgroup.WG=128.ROWS=8.RPT=2.NX=5.XFORM=4.XV4=0"
        );
        assert!(spec.wgsl().contains("fn step_weights"));
    }

    /// The int8 few-row default picks, for the Llama-1B/8B projections at 32 tokens, the
    /// lanes per row of the fastest four-row variant of the v35 sweep on the H200; the rule
    /// before it (two rows, `TARGET_THREADS`) what it picked then.
    #[test]
    fn q8_rows_default_follows_the_sweep() {
        let shapes = [
            // (rows, cols, lanes now, lanes before): 1B q|k|v, gate|up, down; 8B q|k|v,
            // attention output.
            (3072, 2048, 32, 16),
            (16_384, 2048, 8, 16),
            (2048, 8192, 64, 64),
            (6144, 4096, 16, 32),
            (4096, 4096, 32, 32),
        ];
        for (rows, cols, now, before) in shapes {
            let rule = Q8RowsRule {
                rpt: Q8_ROWS_RPT,
                threads: Q8_TARGET_THREADS,
                first_lanes: FEW_ROWS_FIRST_LANES,
            };
            let t = FewRowTunables::for_q8_matrix(GgmlType::Q4K, rows, cols, true, rule);
            assert!(t.is_valid_q8(), "{t:?}");
            assert_eq!((t.rpt, t.lanes_per_group()), (4, now), "{rows}x{cols}");
            let old = Q8RowsRule {
                rpt: 2,
                threads: TARGET_THREADS,
                first_lanes: FEW_ROWS_FIRST_LANES,
            };
            let t = FewRowTunables::for_q8_matrix(GgmlType::Q4K, rows, cols, true, old);
            assert_eq!((t.rpt, t.lanes_per_group()), (2, before), "{rows}x{cols}");
        }
        // Below 32 rows on a GPU (the runtime's narrow rule: a warp a row group, never
        // widened): the v54 sweep's fastest variant at 8 rows on each Llama-8B projection.
        for (ty, rows, cols, rpt, wg_rows) in [
            (GgmlType::Q4K, 6144, 4096, 4, 16),
            (GgmlType::Q4K, 4096, 4096, 4, 16),
            (GgmlType::Q4K, 28_672, 4096, 4, 16),
            (GgmlType::Q6K, 4096, 14_336, 2, 8),
        ] {
            let rule = Q8RowsRule {
                rpt,
                threads: 0,
                first_lanes: 32,
            };
            let t = FewRowTunables::for_q8_matrix(ty, rows, cols, true, rule);
            assert!(t.is_valid_q8(), "{t:?}");
            assert_eq!(
                (t.wg, t.rows, t.rpt),
                (128, wg_rows, rpt),
                "{ty:?} {rows}x{cols}"
            );
        }
        // Every int8 type, tiny to huge, on a GPU and a CPU adapter: a valid variant.
        for ty in GgmlType::ALL
            .into_iter()
            .filter(|&t| crate::gemv::takes_q8_input(t))
        {
            for (rows, cols) in [(1, 256), (3, 256), (1 << 20, 256 * 64)] {
                for (rpt, threads, first_lanes) in [
                    (Q8_ROWS_RPT, Q8_TARGET_THREADS, 8),
                    (Q8_ROWS_RPT, 1, 8),
                    (1, 1, 8),
                    (2, TARGET_THREADS, 32),
                    (4, 0, 32),
                ] {
                    let rule = Q8RowsRule {
                        rpt,
                        threads,
                        first_lanes,
                    };
                    let t = FewRowTunables::for_q8_matrix(ty, rows, cols, true, rule);
                    assert!(t.is_valid_q8(), "{ty:?} {rows}x{cols} {t:?}");
                }
            }
        }
    }
}
