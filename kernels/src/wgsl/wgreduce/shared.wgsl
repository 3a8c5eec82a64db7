// Workgroup-wide sum and max through workgroup memory (a log2(WG) tree).

struct Lanes {
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
}

var<workgroup> wred: array<f32, 1024>;

fn wg_sum(l: Lanes, v: f32) -> f32 {
    wred[l.lid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if l.lid < s {
            wred[l.lid] += wred[l.lid + s];
        }
        workgroupBarrier();
    }
    let total = wred[0];
    workgroupBarrier();
    return total;
}

fn wg_max(l: Lanes, v: f32) -> f32 {
    wred[l.lid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if l.lid < s {
            wred[l.lid] = max(wred[l.lid], wred[l.lid + s]);
        }
        workgroupBarrier();
    }
    let total = wred[0];
    workgroupBarrier();
    return total;
}
