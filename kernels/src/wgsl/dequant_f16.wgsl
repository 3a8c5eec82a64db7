enable f16;

// Dequantizes a GGUF matrix to row-major f16, one thread per decoding step of the quant snippet
// (4 values, or 4 + 4 where XB > 0): the first half of the tensor-core GEMM's dequantized path
// (`ops::gemm`, `GemmPath::CoopDequant`), whose second half is gemm_coop.wgsl over these rows.
// Each value is the fused kernel's exactly — the snippet's `step_weights` rounded to f16 by the
// same conversion — so both paths multiply the same f16 operands in the same order and give
// the same bits; this path decodes each weight once per GEMM instead of once per tile of tokens.

struct Params {
    rows: u32,      // rows to write
    cols: u32,      // columns: a multiple of the type's unit
    row_bytes: u32, // bytes of a row of `w`
    grid_x: u32,    // workgroups along x (2D grids)
}

override WG: u32 = 256u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> w: array<u32>;
// Row r's values at out[r * cols / 4 ..]: four f16s an element.
@group(0) @binding(2) var<storage, read_write> out: array<vec4<f16>>;

//!include common.wgsl
//!include quant

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let subs = UNIT_ELEMS / SUB_ELEMS;
    let steps = p.cols / UNIT_ELEMS * subs * SUB_STEPS;
    let i = (wg.x + wg.y * p.grid_x) * WG + lid;
    if i >= p.rows * steps {
        return;
    }
    // As gemm_coop.wgsl's weight_step: step g of row r is step k of sub-block s of unit u.
    let r = i / steps;
    let g = i % steps;
    let k = g % SUB_STEPS;
    let u = g / SUB_STEPS / subs;
    let s = g / SUB_STEPS % subs;
    let sw = step_weights(r * p.row_bytes + u * UNIT_BYTES, s, k);
    let o = (r * p.cols + u * UNIT_ELEMS + SUB_ELEMS * s + 4u * k) / 4u;
    out[o] = vec4<f16>(sw.a);
    if XB > 0u {
        out[o + XB] = vec4<f16>(sw.b);
    }
}
