//! The paged KV cache (the MLC `create_kv_cache` role): per layer a pool of key pages and a
//! pool of value pages (`[pages, page, kv_heads, head_dim]` f32), and one page table for the
//! sequence (logical page → pool page, shared by every layer, on the GPU and mirrored here).
//! The attention kernels resolve positions through the table (`attn_pages.wgsl`), so a
//! sequence's pages need not be contiguous or in order: positions are backed page by page as
//! the sequence grows, truncation (a new prompt diverging from the cached one, `/reset`)
//! returns whole pages to the free list, and the pages a later turn takes are whichever are
//! free.
//!
//! The pools are allocated for the whole capacity when the cache is made (WebGPU buffers do not
//! grow in place, and a pool is one binding). What paging buys today is that positions are not
//! tied to pool rows; sharing a prefix's pages between sequences is the next step the layout
//! allows.

use gpuport_kernels::attention::PAGE_MULTIPLE;

use super::arch::ModelConfig;
use gpuport_runtime::device::Gpu;
use gpuport_runtime::error::GpuError;
use gpuport_runtime::ops::KvLayer;
use gpuport_runtime::tensor::{Elem, Tensor};

/// Positions per page unless asked otherwise: the smallest the kernels take (a page holds
/// whole key blocks of up to 64 keys).
pub const DEFAULT_PAGE: usize = PAGE_MULTIPLE as usize;

/// Bytes of the key and value pools of a cache of `capacity` positions in pages of `page`.
pub fn pool_bytes(cfg: &ModelConfig, capacity: usize, page: usize) -> u64 {
    let positions = capacity.div_ceil(page.max(1)) * page;
    2 * (cfg.layers * positions * cfg.kv_dim() * 4) as u64
}

/// A sequence's paged KV cache.
pub struct KvCache {
    /// Per layer: the key pool and the value pool.
    layers: Vec<(Tensor, Tensor)>,
    /// The page table on the GPU (u32, one entry per logical page of the capacity).
    table: Tensor,
    /// Pool page of each backed logical page, in order.
    backed: Vec<u32>,
    /// Pool pages not in use; the next one taken is the last.
    free: Vec<u32>,
    page: usize,
    capacity: usize,
    len: usize,
    /// Elements of one position's keys (all KV heads).
    kv_dim: usize,
}

impl KvCache {
    /// A cache of `capacity` positions in pages of `page` positions (a positive multiple of
    /// 64) for the model `cfg`.
    pub fn new(
        gpu: &Gpu,
        cfg: &ModelConfig,
        capacity: usize,
        page: usize,
    ) -> Result<KvCache, GpuError> {
        if capacity == 0 || page == 0 || !page.is_multiple_of(DEFAULT_PAGE) {
            return Err(GpuError::Shape(format!(
                "a KV cache of {capacity} positions in pages of {page} (a positive multiple of \
                 {DEFAULT_PAGE})"
            )));
        }
        let pages = capacity.div_ceil(page);
        // One pool of each kind per layer: pool_bytes / (2 layers) bytes.
        let n = pages * page * cfg.kv_dim();
        let layers = (0..cfg.layers)
            .map(|i| {
                Ok((
                    gpu.zeros_f32(&[n], &format!("key pages {i}"))?,
                    gpu.zeros_f32(&[n], &format!("value pages {i}"))?,
                ))
            })
            .collect::<Result<_, GpuError>>()?;
        let table = gpu.upload(&vec![0u8; 4 * pages], Elem::U32, &[pages], "page table")?;
        Ok(KvCache {
            layers,
            table,
            backed: Vec::with_capacity(pages),
            free: (0..pages as u32).rev().collect(),
            page,
            capacity,
            len: 0,
            kv_dim: cfg.kv_dim(),
        })
    }

    /// Whether this cache has the layers and KV width of model `cfg`.
    pub fn fits(&self, cfg: &ModelConfig) -> bool {
        self.layers.len() == cfg.layers && self.kv_dim == cfg.kv_dim()
    }

    /// Positions the cache can hold.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Positions filled (the sequence so far).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no position is filled.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Positions per page.
    pub fn page(&self) -> usize {
        self.page
    }

    /// Pool page of each backed logical page, in order.
    pub fn page_table(&self) -> &[u32] {
        &self.backed
    }

    /// Layer `i` as the attention kernels bind it.
    pub(crate) fn layer(&self, i: usize) -> KvLayer<'_> {
        let (k, v) = &self.layers[i];
        KvLayer {
            k,
            v,
            pages: &self.table,
            page: self.page as u32,
        }
    }

    /// Backs positions `len..len + n` with pages (writing the new table entries) and counts
    /// them as filled: the caller records the work that fills them next.
    pub(crate) fn extend(&mut self, gpu: &Gpu, n: usize) -> Result<(), GpuError> {
        let want = self.len + n;
        if want > self.capacity {
            return Err(GpuError::Shape(format!(
                "{want} positions in a KV cache of {}",
                self.capacity
            )));
        }
        let first = self.backed.len();
        while self.backed.len() * self.page < want {
            // The capacity check above leaves a free page for every logical one.
            let Some(page) = self.free.pop() else {
                return Err(GpuError::Shape("the KV cache ran out of pages".into()));
            };
            self.backed.push(page);
        }
        if self.backed.len() > first {
            gpu.queue.write_buffer(
                &self.table.buffer,
                self.table.offset + 4 * first as u64,
                bytemuck::cast_slice(&self.backed[first..]),
            );
        }
        self.len = want;
        Ok(())
    }

    /// Keeps positions `..len` (no-op past the end); whole pages past it go back to the free
    /// list.
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
        let keep = self.len.div_ceil(self.page);
        self.free
            .extend(self.backed.drain(keep.min(self.backed.len())..));
    }
}
