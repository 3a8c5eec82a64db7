// The rows of a prefill batch (the prefill passes include this after attn_pages.wgsl and declare
// `rows`, the batch's row table: four u32 per row, (position, page-table base, token index, 0); bound to the page table, and
// unread, when `p.row_table` is 0).
// Token t of a batch: its position and its sequence's page-table base (see `row_table`).
fn batch_row(t: u32) -> vec2<u32> {
    if p.row_table == 1u {
        let i = 4u * (p.rows_first + t);
        return vec2<u32>(rows[i], rows[i + 1u]);
    }
    return vec2<u32>(p.n_keys - p.tokens + t, 0u);
}
