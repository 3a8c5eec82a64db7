// The paged KV cache (attention kernels that read or write it): the caches `k`, `v` are pools of
// pages of `p.page` positions ([pages, page, kv_heads, head_dim]), and `pages` maps a
// sequence's logical page to its physical one. A page holds whole key blocks (KB divides 64,
// which divides the page), so a kernel resolves a block's page once.

// The pool row of logical position j.
fn cache_row(j: u32) -> u32 {
    return cache_row_in(0u, j);
}

// The pool row of logical position j of the sequence whose page table starts at entry `base`
// of `pages` (batches of several sequences share one table buffer).
fn cache_row_in(base: u32, j: u32) -> u32 {
    return pages[base + j / p.page] * p.page + j % p.page;
}

