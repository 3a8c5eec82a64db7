// The bindings 0-5 of the prefill causal passes (attn_prefill.wgsl, attn_tiles.wgsl,
// attn_coop.wgsl, attn_rows_sg.wgsl): the
// uniform block, the prepared queries [tokens, heads, head_dim], the paged key and value caches,
// the output [tokens, heads * head_dim], and the page table. The caches hold `KvWord`s
// (the `kv` snippet: f32 or f16 values, four a word), read through `kv_load`.

//!include attn_params.wgsl
//!include kv

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> k: array<KvWord>;
@group(0) @binding(3) var<storage, read> v: array<KvWord>;
@group(0) @binding(4) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> pages: array<u32>;
