enable f16;

// The tensor-core GEMM's input rows, formed once and rounded to f16 (gemm_coop.wgsl with XH 1
// reads them): out[t, e..e+4] = f16(clamp(input(X[t])[e..e+4], ±65504)), `cols` values a row,
// rows back to back. The same expression gemm_coop.wgsl applies when it forms its input itself
// (XH 0), so both give the same bits; formed once, every tile of weight rows then reads 2
// bytes a value instead of 4 (X is re-read by every one of a GEMM's row tiles: 224 times for
// the Llama-8B shape's gate and up projections, where it was 88% of the kernel's reads).
// One invocation per four values; the form (XFORM, XV4) and X's offset, stride and GLU
// operand come from the GEMM's own uniform block.

//!include gemm_params.wgsl

override WG: u32 = 256u;
override XFORM: u32 = 0u;
override XV4: u32 = 1u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
// Token t's values at out[t * cols / 4 ..], four f16s an element.
@group(0) @binding(2) var<storage, read_write> out: array<vec4<f16>>;
// `x` again, as vec4s (read when XV4 is 1).
@group(0) @binding(3) var<storage, read> x4: array<vec4<f32>>;

//!include gemm_input.wgsl

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wg.x + wg.y * p.grid_x) * WG + lid;
    let per_row = p.cols / 4u;
    if i >= p.tokens * per_row {
        return;
    }
    let v = xin(i / per_row, 4u * (i % per_row));
    out[i] = vec4<f16>(clamp(v, vec4<f32>(-65504.0), vec4<f32>(65504.0)));
}
