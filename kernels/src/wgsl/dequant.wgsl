// Dequantizes GGUF blocks to f32, one thread per element: the GPU half of the bit-exact
// dequantization check (and a building block for GEMM on types without a fused path).

struct Params {
    elems: u32,     // elements to write
    w_offset: u32,  // byte offset of the first unit in `w`
    grid_x: u32,    // workgroups along x
    _pad: u32,
}

override WG: u32 = 256u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
// Unused here; the quant snippets' dot functions name it.
@group(0) @binding(3) var<storage, read> x: array<vec4<f32>>;
fn xin(i: u32) -> vec4<f32> {
    return x[i];
}

//!include common.wgsl
//!include quant

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wg.x + wg.y * p.grid_x) * WG + lid;
    if i < p.elems {
        out[i] = dequant_elem(p.w_offset + (i / UNIT_ELEMS) * UNIT_BYTES, i % UNIT_ELEMS);
    }
}
