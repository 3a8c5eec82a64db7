// The output store of the GEMM kernels: element i of `y` (output column `row`) gets v plus
// what `p.residual` asks for (gemm_params.wgsl): the residual at the same index, or the bias
// of the column. The including kernel declares `p`, `y` and `res`.

fn store_output(i: u32, row: u32, v: f32) {
    var out = v;
    if p.residual == 1u {
        out += res[i];
    } else if p.residual == 2u {
        out += res[p.y_offset + row];
    }
    y[i] = out;
}
