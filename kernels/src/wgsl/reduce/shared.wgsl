// Row reduction through workgroup memory: a log2(T)-step tree with a barrier per step.

struct Lanes {
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
}

fn linear_id(l: Lanes) -> u32 {
    return l.lid;
}

var<workgroup> red: array<vec4<f32>, 256>;

fn reduce_rows(l: Lanes, v: vec4<f32>, id: u32, lane: u32) -> vec4<f32> {
    red[id] = v;
    workgroupBarrier();
    for (var s = T / 2u; s > 0u; s >>= 1u) {
        if lane < s {
            red[id] += red[id + s];
        }
        workgroupBarrier();
    }
    return red[id - lane];
}

// The sum of v over the whole workgroup, for every thread: a log2(WG)-step tree. `red` is free
// again on return.
fn wg_total(l: Lanes, v: vec4<f32>, id: u32) -> vec4<f32> {
    red[id] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if id < s {
            red[id] += red[id + s];
        }
        workgroupBarrier();
    }
    let total = red[0];
    workgroupBarrier();
    return total;
}
