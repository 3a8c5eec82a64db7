// Embedding lookup: out[t, :] = dequant(table[ids[id_offset + t], :]) * scale, straight from
// the quantized table (GGUF rows of whole blocks), one thread per output element. A table
// larger than one binding is bound in chunks of rows [first_row, first_row + chunk_rows), one
// dispatch each: a chunk writes only the ids it holds, and the chunk at row 0 writes zeros for
// ids past the table.

struct Params {
    tokens: u32,
    cols: u32,
    row_bytes: u32,
    rows: u32,      // rows of the whole table; an id past it gives zeros
    scale: f32,
    grid_x: u32,
    first_row: u32,
    chunk_rows: u32,
    id_offset: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

override WG: u32 = 256u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read> ids: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
// Named by the quant snippets' dot functions, which this kernel does not call.
@group(0) @binding(4) var<storage, read> x: array<vec4<f32>>;
fn xin(i: u32) -> vec4<f32> {
    return x[i];
}

//!include common.wgsl
//!include quant

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wg.x + wg.y * p.grid_x) * WG + lid;
    if i >= p.tokens * p.cols {
        return;
    }
    let t = i / p.cols;
    let e = i % p.cols;
    let row = ids[p.id_offset + t];
    if row >= p.rows {
        if p.first_row == 0u {
            out[i] = 0.0;
        }
        return;
    }
    if row < p.first_row || row - p.first_row >= p.chunk_rows {
        return;
    }
    let b = (row - p.first_row) * p.row_bytes + (e / UNIT_ELEMS) * UNIT_BYTES;
    out[i] = dequant_elem(b, e % UNIT_ELEMS) * p.scale;
}
