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
// weight rows. One thread per output block.

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

//!include activation.wgsl
//!include q8_grid.wgsl

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let b = (wg.x + wg.y * p.grid_x) * WG + lid;
    if b >= p.blocks {
        return;
    }
    let at = (b / p.row_blocks) * p.row_stride + (b % p.row_blocks) * 8u;
    if BLOCKS == 1u {
        write_block(b, at);
        return;
    }
    if ACT != 0u {
        let up = p.row_blocks * 8u;
        for (var k = 0u; k < 8u; k++) {
            x[at + k] = gate4(x[at + k], ACT == 1u) * x[at + up + k];
        }
    }
    if ROUND == 0u {
        return;
    }
    var amax = 0.0;
    for (var k = 0u; k < 8u; k++) {
        let a = abs(x[at + k]);
        amax = max(amax, max(max(a.x, a.y), max(a.z, a.w)));
    }
    let d = q8_scale(amax);
    for (var k = 0u; k < 8u; k++) {
        // Clamped as pack4xI8Clamp clamps the GEMV's blocks.
        let q = clamp(q8_quants(x[at + k], d), vec4<i32>(-128), vec4<i32>(127));
        x[at + k] = vec4<f32>(q) * d;
    }
}

// Value vec4 `k` of the block at `at`: its gated activation where ACT is set, as the in-place
// pass writes it.
fn block_value(at: u32, k: u32) -> vec4<f32> {
    if ACT != 0u {
        return gate4(x[at + k], ACT == 1u) * x[at + p.row_blocks * 8u + k];
    }
    return x[at + k];
}

// Block `b` (its values at `at`) as int8 words into `qb`, the values formed again for the
// quants rather than kept in a private array.
fn write_block(b: u32, at: u32) {
    var amax = 0.0;
    for (var k = 0u; k < 8u; k++) {
        let a = abs(block_value(at, k));
        amax = max(amax, max(max(a.x, a.y), max(a.z, a.w)));
    }
    let d = q8_scale(amax);
    var sum = 0.0;
    for (var k = 0u; k < 8u; k++) {
        let v = q8_quants(block_value(at, k), d);
        qb[12u * b + k] = pack4xI8Clamp(v);
        sum += f32(v.x + v.y + v.z + v.w);
    }
    qb[12u * b + 8u] = bitcast<u32>(d);
    qb[12u * b + 9u] = bitcast<u32>(d * sum);
    qb[12u * b + 10u] = 0u;
    qb[12u * b + 11u] = 0u;
}
