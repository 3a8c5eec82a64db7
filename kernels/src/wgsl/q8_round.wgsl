// Rounds rows of f32 in place onto the int8 grid the int8-input GEMV sees (q8_grid.wgsl):
// every 32-element block becomes q * d, d = max |x| / 127 and q = round(x / d). A GEMM over
// many rows of a matrix whose one-row GEMV takes int8 input (Q8_0) reads its input through this
// first, so a token's logits do not depend on how many rows its forward pass held (a prompt's
// last token prefilled beside others, or alone, or decoded). One thread per block.

struct Params {
    blocks: u32,
    grid_x: u32,
    _pad0: u32,
    _pad1: u32,
}

override WG: u32 = 256u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> x: array<vec4<f32>>;

//!include q8_grid.wgsl

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let b = (wg.x + wg.y * p.grid_x) * WG + lid;
    if b >= p.blocks {
        return;
    }
    var amax = 0.0;
    for (var k = 0u; k < 8u; k++) {
        let a = abs(x[8u * b + k]);
        amax = max(amax, max(max(a.x, a.y), max(a.z, a.w)));
    }
    let d = q8_scale(amax);
    for (var k = 0u; k < 8u; k++) {
        // Clamped as pack4xI8Clamp clamps the GEMV's blocks.
        let q = clamp(q8_quants(x[8u * b + k], d), vec4<i32>(-128), vec4<i32>(127));
        x[8u * b + k] = vec4<f32>(q) * d;
    }
}
