// Gathers rows of 32-bit words: dst[i, c] = src[idx[idx_first + i * idx_stride] * width + c] for
// rows i < rows and columns c < width. A batch of rows from several sequences uses it twice:
// each row's token id from the token buffer (width 1, the index being the row table's token
// field), and the rows whose logits are wanted from the final activations (width = hidden).

struct Params {
    rows: u32,
    width: u32,
    idx_first: u32,
    idx_stride: u32,
    grid_x: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

override WG: u32 = 256u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read> idx: array<u32>;
@group(0) @binding(3) var<storage, read_write> dst: array<u32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wg.x + wg.y * p.grid_x) * WG + lid;
    if i >= p.rows * p.width {
        return;
    }
    let r = i / p.width;
    let c = i % p.width;
    dst[i] = src[idx[p.idx_first + r * p.idx_stride] * p.width + c];
}
