// Workgroup-wide sum and max: a subgroup operation, then one barrier to combine subgroups.

struct Lanes {
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(subgroup_id) sg_id: u32,
    @builtin(num_subgroups) sg_count: u32,
    @builtin(subgroup_invocation_id) sg_lane: u32,
}

var<workgroup> wred: array<f32, 1024>;

fn wg_sum(l: Lanes, v: f32) -> f32 {
    let s = subgroupAdd(v);
    if l.sg_lane == 0u {
        wred[l.sg_id] = s;
    }
    workgroupBarrier();
    var total = 0.0;
    for (var i = 0u; i < l.sg_count; i++) {
        total += wred[i];
    }
    workgroupBarrier();
    return total;
}

fn wg_max(l: Lanes, v: f32) -> f32 {
    let s = subgroupMax(v);
    if l.sg_lane == 0u {
        wred[l.sg_id] = s;
    }
    workgroupBarrier();
    var total = wred[0];
    for (var i = 1u; i < l.sg_count; i++) {
        total = max(total, wred[i]);
    }
    workgroupBarrier();
    return total;
}
