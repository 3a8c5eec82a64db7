// Data movement by an index map computed at plan time (Transpose, Slice, Expand, Pad, Resize,
// Gather, Split, Concat). MODE 0 gathers: out[i] = src[map[i]], or `fill` where map[i] is
// 0xffffffff; MODE 1 scatters: out[map[i]] = src[i].

struct Params {
    n: u32, grid_x: u32, fill: f32, _pad: u32,
}

override WG: u32 = 256u;
override MODE: u32 = 0u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read> idx_map: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wg.x + wg.y * p.grid_x) * WG + lid;
    if i >= p.n {
        return;
    }
    let m = idx_map[i];
    if MODE == 1u {
        out[m] = src[i];
    } else if m == 0xffffffffu {
        out[i] = p.fill;
    } else {
        out[i] = src[m];
    }
}
