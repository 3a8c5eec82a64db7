// Rows of f32 in place: an optional gated activation (ACT 1: SwiGLU, 2: GeGLU; each row is
// [gate | up] and act(gate) * up replaces its gate half), then, with ROUND, every 32-element
// block of the result rounded onto the int8 grid the int8-input GEMV sees (q8_grid.wgsl):
// q * d, d = max |x| / 127 and q = round(x / d). A GEMM over many rows of a matrix whose
// one-row GEMV takes int8 input reads its input through this first, so a token's logits do not
// depend on how many rows its forward pass held (a prompt's last token prefilled beside
// others, or alone, or decoded). BLOCKS 1: x is left as it is and each block goes out to `qb`
// as the int8 blocks gemv_q8.wgsl reads (12 words per 32 values, the layout of gemv.wgsl's
// INPUT_ONLY 2), the one-row path's input in one dispatch with the same numbers; a GEMM on
// tensor cores reads the activation formed once here (ROUND 0) instead of once per tile of
// weight rows.
//
// One thread per four values, eight per block (WG a multiple of 8): each forms its vec4 once
// and holds it; the block's largest magnitude and, for BLOCKS, its quants' sum go through
// workgroup memory. Was one thread per block, which read its 32 values three times in turn
// and left the GPU nearly idle on one token's row (448 threads for a 14,336-wide FFN). The
// same numbers: the maximum is exact in any order, and the quant sum is added in the block's
// order as before.

struct Params {
    // 32-element output blocks.
    blocks: u32,
    grid_x: u32,
    // Output blocks per row.
    row_blocks: u32,
    // vec4s from one row to the next (a [gate | up] row with ACT).
    row_stride: u32,
}

override WG: u32 = 256u;
override ACT: u32 = 0u;
override ROUND: u32 = 1u;
override BLOCKS: u32 = 0u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> x: array<vec4<f32>>;
// BLOCKS 1: the int8 blocks, `blocks` of them one after another; bound to x, and untouched,
// otherwise.
@group(0) @binding(2) var<storage, read_write> qb: array<u32>;

// Per thread: its four values' largest magnitude, then (BLOCKS) their quants' sum.
var<workgroup> part: array<f32, WG>;

//!include activation.wgsl
//!include q8_grid.wgsl

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wg.x + wg.y * p.grid_x) * WG + lid;
    let b = i / 8u;
    let k = i % 8u;
    let live = b < p.blocks;
    // Past the last block: the last block's values (in bounds; never stored), so every thread
    // reaches the barriers.
    let bb = min(b, p.blocks - 1u);
    let at = (bb / p.row_blocks) * p.row_stride + (bb % p.row_blocks) * 8u + k;
    var v = x[at];
    if ACT != 0u {
        v = gate4(v, ACT == 1u) * x[at + p.row_blocks * 8u];
    }
    if ROUND == 0u && BLOCKS == 0u {
        if live {
            x[at] = v;
        }
        return;
    }
    let a = abs(v);
    part[lid] = max(max(a.x, a.y), max(a.z, a.w));
    workgroupBarrier();
    let first = lid - k;
    var amax = 0.0;
    for (var j = 0u; j < 8u; j++) {
        amax = max(amax, part[first + j]);
    }
    let d = q8_scale(amax);
    let q = q8_quants(v, d);
    if BLOCKS == 0u {
        // Clamped as pack4xI8Clamp clamps the GEMV's blocks.
        if live {
            x[at] = vec4<f32>(clamp(q, vec4<i32>(-128), vec4<i32>(127))) * d;
        }
        return;
    }
    if live {
        qb[12u * b + k] = pack4xI8Clamp(q);
    }
    workgroupBarrier();
    part[lid] = f32(q.x + q.y + q.z + q.w);
    workgroupBarrier();
    if live && k == 0u {
        var sum = 0.0;
        for (var j = 0u; j < 8u; j++) {
            sum += part[lid + j];
        }
        qb[12u * b + 8u] = bitcast<u32>(d);
        qb[12u * b + 9u] = bitcast<u32>(d * sum);
        qb[12u * b + 10u] = 0u;
        qb[12u * b + 11u] = 0u;
    }
}
