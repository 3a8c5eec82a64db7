// Streaming read: the bandwidth ceiling a GEMV is measured against. Each thread reads vec4<u32>
// words grid-stride and folds them into one word, written once so the loads cannot be removed.

struct Params {
    words: u32,       // vec4 words in `src`
    threads: u32,     // total threads in the grid
    _pad0: u32,
    _pad1: u32,
}

override WG: u32 = 256u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> sink: array<u32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    var acc = vec4<u32>(0u);
    for (var i = gid.x; i < p.words; i += p.threads) {
        acc ^= src[i];
    }
    let folded = acc.x ^ acc.y ^ acc.z ^ acc.w;
    // Almost never true, but the compiler cannot know: keeps every load live.
    if folded == 0x9E3779B9u {
        sink[gid.x] = folded;
    }
}
