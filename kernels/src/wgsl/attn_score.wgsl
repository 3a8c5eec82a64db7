// A key's attention score from its LPK lanes' partial dot products (decode and prefill
// attention): the lanes' sums meet in workgroup memory, the key's first lane adds them, scales,
// and applies the optional soft cap. Called by the whole workgroup (one barrier); `first_lane`
// marks the thread that returns the score, every other thread gets -3e38 (no weight).

var<workgroup> partial: array<f32, 256>;

fn key_score(l: Lanes, acc: vec4<f32>, first_lane: bool) -> f32 {
    partial[l.lid] = acc.x + acc.y + acc.z + acc.w;
    workgroupBarrier();
    var s = -3.0e38;
    if first_lane {
        var dot_ = 0.0;
        for (var i = 0u; i < LPK; i++) {
            dot_ += partial[l.lid + i];
        }
        s = dot_ * p.scale;
        if p.cap > 0.0 {
            s = p.cap * tanh(clamp(s / p.cap, -15.0, 15.0));
        }
    }
    return s;
}
