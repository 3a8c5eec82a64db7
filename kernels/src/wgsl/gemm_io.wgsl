// The uniform block and the storage bindings 0-4 of the GEMM kernels (gemm.wgsl,
// gemm_rows.wgsl, gemm_coop.wgsl): Y[t, r] = sum_k W[r, k] * input(X[t])[k] (+ a residual or a
// bias), W a row-major GGUF matrix, X and Y f32 token-major with their own row strides.

//!include gemm_params.wgsl
//!include gemm_store.wgsl

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read> x: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
// The residual (same indexing as y) or the bias (indexed by output column); bound to x, and
// unread, when `residual` is 0.
@group(0) @binding(4) var<storage, read> res: array<f32>;
