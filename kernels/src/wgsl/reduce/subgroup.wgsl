// Row reduction with subgroup shuffles. Lanes are numbered subgroup by subgroup
// (subgroup_id * subgroup_size + subgroup_invocation_id), so a row's T lanes are whole
// subgroups or an aligned part of one: XOR shuffles sum within a subgroup without barriers, and
// rows wider than a subgroup add their subgroups' sums after a single barrier.

struct Lanes {
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(subgroup_id) sg_id: u32,
    @builtin(subgroup_size) sg_size: u32,
    @builtin(subgroup_invocation_id) sg_lane: u32,
}

fn linear_id(l: Lanes) -> u32 {
    return l.sg_id * l.sg_size + l.sg_lane;
}

var<workgroup> red: array<vec4<f32>, 256>;

fn reduce_rows(l: Lanes, v: vec4<f32>, id: u32, lane: u32) -> vec4<f32> {
    let width = min(T, l.sg_size);
    var s = v;
    for (var o = 1u; o < width; o <<= 1u) {
        s += subgroupShuffleXor(s, o);
    }
    red[id] = s;
    workgroupBarrier();
    var total = vec4<f32>(0.0);
    let first = id - lane;
    for (var i = 0u; i < T; i += width) {
        total += red[first + i];
    }
    return total;
}

// The sum of v over the whole workgroup, for every thread: subgroup sums, one barrier, their
// total. `red` is free again on return.
fn wg_total(l: Lanes, v: vec4<f32>, id: u32) -> vec4<f32> {
    let s = subgroupAdd(v);
    if l.sg_lane == 0u {
        red[l.sg_id] = s;
    }
    workgroupBarrier();
    var total = vec4<f32>(0.0);
    for (var i = 0u; i < (WG + l.sg_size - 1u) / l.sg_size; i++) {
        total += red[i];
    }
    workgroupBarrier();
    return total;
}
