//! The paged KV cache (the MLC `create_kv_cache` role). A [`KvPool`] holds, per layer, a pool of
//! key pages and a pool of value pages (`[pages, page, kv_heads, head_dim]`, f32 or f16:
//! [`gpuport_kernels::attention::KV_TYPES`]; f16 halves the memory and what attention reads,
//! and rounds each key and value once, as llama.cpp's default cache does) shared by every
//! sequence of a model, one free list of pages, and one page-table buffer in which each sequence
//! slot owns a stretch (logical page → pool page; on the GPU and mirrored here). The attention
//! kernels resolve positions through the tables (`attn_pages.wgsl`), so a sequence's pages need
//! not be contiguous or in order: positions are backed page by page as a sequence grows, and
//! truncation (a new prompt diverging from the cached one, `/reset`) or the end of a sequence
//! returns pages to the free list.
//!
//! Pages are reference-counted: [`KvPool::fork`] starts a sequence on another's pages for a
//! shared prompt prefix (N requests with one system prompt prefill it once). A page shared by
//! several sequences is never written: a sequence that grows into a partly filled shared page
//! first copies it to a page of its own (copy-on-write), and a fully filled shared page is only
//! read.
//!
//! A [`KvCache`] is a pool with one sequence: the single-sequence [`crate::Session`] and the
//! MLC roles use it.
//!
//! The pools are allocated when the pool is made (WebGPU buffers do not grow in place, and a
//! pool is one binding per layer and kind).

use gpuport_kernels::attention::{KV_TYPES, PAGE_MULTIPLE};
use gpuport_kernels::quant::GgmlType;

use super::arch::ModelConfig;
use super::error::LlmError;
use gpuport_runtime::device::Gpu;
use gpuport_runtime::error::GpuError;
use gpuport_runtime::ops::{self, KvLayer};
use gpuport_runtime::tensor::{Elem, Tensor};

/// Positions per page unless asked otherwise: the smallest the kernels take (a page holds
/// whole key blocks of up to 64 keys).
pub const DEFAULT_PAGE: usize = PAGE_MULTIPLE as usize;

/// The environment variable that sets the KV cache type of the models loaded
/// ([`default_kv_type`]): `f32` or `f16`.
pub const KV_TYPE_ENV: &str = "GPUPORT_KV_TYPE";

/// A KV cache type by name: `f32` or `f16` (case-insensitive); the error names the types a
/// cache takes.
pub fn parse_kv_type(name: &str) -> Result<GgmlType, String> {
    KV_TYPES
        .into_iter()
        .find(|t| t.name().eq_ignore_ascii_case(name.trim()))
        .ok_or_else(|| {
            format!(
                "KV cache type {name:?}: a cache holds {}",
                KV_TYPES.map(|t| t.name()).join(" or ")
            )
        })
}

/// `kv` when a cache can hold it (one of [`KV_TYPES`]), else the request error naming those.
pub fn check_kv_type(kv: GgmlType) -> Result<GgmlType, LlmError> {
    kv_elem(kv)
        .map(|_| kv)
        .map_err(|e| LlmError::Request(e.to_string()))
}

/// The KV cache type on `gpu` where neither the caller nor [`KV_TYPE_ENV`] chooses one: f16 on
/// GPUs — llama.cpp's default and half the memory; on the H100 Gemma 3 decoded 4% faster after
/// a 4,096-token prompt (v37), level after 16,384 with its prompt 4% faster (v38), the 8B's
/// streams level, and the attention tests' f16 rounding passed there (docs/performance.md,
/// "v37", "v38") — and f32 on CPU adapters, where f16 bought no speed (lavapipe, v36) and where
/// `llm_reference`'s llama.cpp fixtures (taken on f32 caches) are checked.
pub fn adapter_kv_type(gpu: &Gpu) -> GgmlType {
    if gpu.is_cpu() {
        GgmlType::F32
    } else {
        GgmlType::F16
    }
}

/// [`KV_TYPE_ENV`]'s type when it is set (a request error naming it when it is not a type
/// [`parse_kv_type`] takes).
pub fn env_kv_type() -> Result<Option<GgmlType>, LlmError> {
    match std::env::var(KV_TYPE_ENV) {
        Ok(v) => parse_kv_type(&v)
            .map(Some)
            .map_err(|e| LlmError::Request(format!("{KV_TYPE_ENV}: {e}"))),
        Err(_) => Ok(None),
    }
}

/// The KV cache type a model loads with on `gpu`: [`KV_TYPE_ENV`]'s when set ([`env_kv_type`]),
/// else [`adapter_kv_type`].
pub fn default_kv_type(gpu: &Gpu) -> Result<GgmlType, LlmError> {
    Ok(env_kv_type()?.unwrap_or_else(|| adapter_kv_type(gpu)))
}

/// Bytes of the key and value pools of a cache of `capacity` positions in pages of `page`
/// holding `kv` values (f32 or f16).
pub fn pool_bytes(cfg: &ModelConfig, capacity: usize, page: usize, kv: GgmlType) -> u64 {
    let positions = capacity.div_ceil(page.max(1)) * page;
    2 * (cfg.layers * positions * cfg.kv_dim()) as u64 * kv_value_bytes(kv)
}

/// Bytes of one cached value of type `kv` (a type outside [`KV_TYPES`] is sized as f32: the
/// plan lists it as a blocker anyway).
fn kv_value_bytes(kv: GgmlType) -> u64 {
    ops::cache_elem(kv).and_then(Elem::bytes).unwrap_or(4)
}

/// The tensor element of a cache of `kv` values, or the error naming the types a cache takes.
fn kv_elem(kv: GgmlType) -> Result<Elem, GpuError> {
    ops::cache_elem(kv).ok_or_else(|| {
        shape(format!(
            "a KV cache of {} values (it holds {})",
            kv.name(),
            KV_TYPES.map(|t| t.name()).join(" or ")
        ))
    })
}

/// Page-table entries a slot's stretch is rounded up to: 64 entries are 256 bytes, the largest
/// storage-binding offset alignment WebGPU allows, so each slot's table binds on its own.
const TABLE_ALIGN: usize = 64;

/// A sequence in a [`KvPool`]: its slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SeqId(pub u32);

/// One sequence's state.
#[derive(Debug, Clone, Default)]
struct Seq {
    /// Pool page of each backed logical page, in order.
    backed: Vec<u32>,
    /// Positions filled.
    len: usize,
}

/// KV pages shared by every sequence of a model.
pub struct KvPool {
    /// Per layer: the key pool and the value pool.
    layers: Vec<(Tensor, Tensor)>,
    /// Every slot's page table (u32, `slots × table_stride`).
    table: Tensor,
    table_stride: usize,
    /// Sequences by slot; `None` = free slot.
    seqs: Vec<Option<Seq>>,
    /// Sequences referencing each pool page.
    refs: Vec<u32>,
    /// Pool pages not in use; the next one taken is the last.
    free: Vec<u32>,
    page: usize,
    /// Positions one sequence can hold.
    seq_capacity: usize,
    /// Elements of one position's keys (all KV heads).
    kv_dim: usize,
    /// The element type of the pools.
    kv: GgmlType,
}

/// What went wrong with a pool request.
fn shape(what: String) -> GpuError {
    GpuError::Shape(what)
}

impl KvPool {
    /// A pool of `pages` pages of `page` positions (a positive multiple of 64) of `kv` values
    /// (one of [`KV_TYPES`]) for model `cfg`, with `slots` sequence slots of up to
    /// `seq_capacity` positions each.
    pub fn new(
        gpu: &Gpu,
        cfg: &ModelConfig,
        (slots, seq_capacity): (usize, usize),
        pages: usize,
        (page, kv): (usize, GgmlType),
    ) -> Result<KvPool, GpuError> {
        let elem = kv_elem(kv)?;
        if seq_capacity == 0 || slots == 0 || page == 0 || !page.is_multiple_of(DEFAULT_PAGE) {
            return Err(shape(format!(
                "a KV pool of {slots} sequences of {seq_capacity} positions in pages of {page} \
                 (positive counts, pages a multiple of {DEFAULT_PAGE})"
            )));
        }
        let seq_pages = seq_capacity.div_ceil(page);
        if pages < seq_pages {
            return Err(shape(format!(
                "a KV pool of {pages} pages cannot hold one sequence of {seq_capacity} positions \
                 ({seq_pages} pages of {page})"
            )));
        }
        // One pool of each kind per layer.
        let n = pages * page * cfg.kv_dim();
        let layers = (0..cfg.layers)
            .map(|i| {
                Ok((
                    gpu.zeros(elem, &[n], &format!("key pages {i}"))?,
                    gpu.zeros(elem, &[n], &format!("value pages {i}"))?,
                ))
            })
            .collect::<Result<_, GpuError>>()?;
        let table_stride = seq_pages.div_ceil(TABLE_ALIGN) * TABLE_ALIGN;
        let entries = slots * table_stride;
        let table = gpu.upload(
            &vec![0u8; 4 * entries],
            Elem::U32,
            &[entries],
            "page tables",
        )?;
        Ok(KvPool {
            layers,
            table,
            table_stride,
            seqs: vec![None; slots],
            refs: vec![0; pages],
            free: (0..pages as u32).rev().collect(),
            page,
            seq_capacity,
            kv_dim: cfg.kv_dim(),
            kv,
        })
    }

    /// The element type the pools hold.
    pub fn kv_type(&self) -> GgmlType {
        self.kv
    }

    /// Whether this pool has the layers and KV width of model `cfg`.
    pub fn fits(&self, cfg: &ModelConfig) -> bool {
        self.layers.len() == cfg.layers && self.kv_dim == cfg.kv_dim()
    }

    /// Positions one sequence can hold.
    pub fn seq_capacity(&self) -> usize {
        self.seq_capacity
    }

    /// Positions per page.
    pub fn page(&self) -> usize {
        self.page
    }

    /// Pages not used by any sequence.
    pub fn free_pages(&self) -> usize {
        self.free.len()
    }

    /// Pages in the pool.
    pub fn total_pages(&self) -> usize {
        self.refs.len()
    }

    /// Sequences referencing pool page `page` (tests and accounting).
    pub fn page_refs(&self, page: u32) -> u32 {
        self.refs.get(page as usize).copied().unwrap_or(0)
    }

    fn seq(&self, id: SeqId) -> Result<&Seq, GpuError> {
        self.seqs
            .get(id.0 as usize)
            .and_then(Option::as_ref)
            .ok_or_else(|| shape(format!("sequence {} is not open in this KV pool", id.0)))
    }

    fn seq_mut(&mut self, id: SeqId) -> Result<&mut Seq, GpuError> {
        self.seqs
            .get_mut(id.0 as usize)
            .and_then(Option::as_mut)
            .ok_or_else(|| shape(format!("sequence {} is not open in this KV pool", id.0)))
    }

    /// Opens an empty sequence in a free slot.
    pub fn open(&mut self) -> Result<SeqId, GpuError> {
        let slot =
            self.seqs.iter().position(Option::is_none).ok_or_else(|| {
                shape(format!("all {} sequence slots are in use", self.seqs.len()))
            })?;
        self.seqs[slot] = Some(Seq::default());
        Ok(SeqId(slot as u32))
    }

    /// Opens a sequence that starts with the first `len` positions of `src` (at most its
    /// length), sharing their pages: nothing is copied until one of them writes into a shared,
    /// partly filled page.
    pub fn fork(&mut self, gpu: &Gpu, src: SeqId, len: usize) -> Result<SeqId, GpuError> {
        let from = self.seq(src)?;
        let len = len.min(from.len);
        let shared: Vec<u32> = from.backed[..len.div_ceil(self.page)].to_vec();
        let id = self.open()?;
        for &p in &shared {
            self.refs[p as usize] += 1;
        }
        self.write_table(gpu, id, 0, &shared);
        *self.seq_mut(id)? = Seq {
            backed: shared,
            len,
        };
        Ok(id)
    }

    /// Ends sequence `id`: its pages lose a reference (unshared ones go back to the free list)
    /// and its slot is free.
    pub fn close(&mut self, id: SeqId) -> Result<(), GpuError> {
        self.truncate(id, 0)?;
        self.seqs[id.0 as usize] = None;
        Ok(())
    }

    /// Positions filled in sequence `id`.
    pub fn len(&self, id: SeqId) -> Result<usize, GpuError> {
        Ok(self.seq(id)?.len)
    }

    /// Pool page of each backed logical page of `id`, in order.
    pub fn page_table(&self, id: SeqId) -> Result<&[u32], GpuError> {
        Ok(&self.seq(id)?.backed)
    }

    /// The first entry of `id`'s page table in the table buffer (row tables name it).
    pub fn table_base(&self, id: SeqId) -> u32 {
        (id.0 as usize * self.table_stride) as u32
    }

    /// Sequence `id`'s stretch of the table buffer, as the single-sequence kernels bind it
    /// (in place of [`KvLayer::pages`]).
    pub(crate) fn seq_table(&self, id: SeqId) -> Tensor {
        let seq_pages = self.seq_capacity.div_ceil(self.page);
        self.table.view(self.table_base(id) as usize, seq_pages)
    }

    /// Layer `i` with every sequence's page table (for batches whose row table names each
    /// row's sequence).
    pub(crate) fn layer_all(&self, i: usize) -> KvLayer<'_> {
        let (k, v) = &self.layers[i];
        KvLayer {
            k,
            v,
            pages: &self.table,
            page: self.page as u32,
        }
    }

    fn write_table(&self, gpu: &Gpu, id: SeqId, first: usize, entries: &[u32]) {
        if entries.is_empty() {
            return;
        }
        let at = self.table_base(id) as usize + first;
        gpu.queue.write_buffer(
            &self.table.buffer,
            self.table.offset + 4 * at as u64,
            bytemuck::cast_slice(entries),
        );
    }

    fn take_page(&mut self) -> Result<u32, GpuError> {
        let page = self.free.pop().ok_or_else(|| {
            shape(format!(
                "the KV pool's {} pages are all in use",
                self.refs.len()
            ))
        })?;
        self.refs[page as usize] = 1;
        Ok(page)
    }

    fn release_page(&mut self, page: u32) {
        let r = &mut self.refs[page as usize];
        *r = r.saturating_sub(1);
        if *r == 0 {
            self.free.push(page);
        }
    }

    /// Backs positions `len..len + n` of `id` with pages it may write (copying a shared, partly
    /// filled last page first) and counts them as filled: the caller records the work that
    /// fills them next. On failure nothing changes but a copied page.
    pub fn extend(&mut self, gpu: &Gpu, id: SeqId, n: usize) -> Result<(), GpuError> {
        let (len, backed) = {
            let s = self.seq(id)?;
            (s.len, s.backed.len())
        };
        let want = len + n;
        if want > self.seq_capacity {
            return Err(shape(format!(
                "{want} positions in a KV cache of {}",
                self.seq_capacity
            )));
        }
        if n == 0 {
            return Ok(());
        }
        let need = want.div_ceil(self.page).saturating_sub(backed);
        let partial = !len.is_multiple_of(self.page);
        let cow = partial && self.refs[self.seq(id)?.backed[backed - 1] as usize] > 1;
        if need + usize::from(cow) > self.free.len() {
            return Err(shape(format!(
                "the KV pool has {} free pages, {} more are needed",
                self.free.len(),
                need + usize::from(cow)
            )));
        }
        if cow {
            // Copy the shared page's filled rows to a page of this sequence's own.
            let old = self.seq(id)?.backed[backed - 1];
            let new = self.take_page()?;
            self.copy_page(gpu, old, new, len % self.page);
            self.release_page(old);
            self.seq_mut(id)?.backed[backed - 1] = new;
            self.write_table(gpu, id, backed - 1, &[new]);
        }
        let mut added = Vec::with_capacity(need);
        for _ in 0..need {
            added.push(self.take_page()?);
        }
        self.write_table(gpu, id, backed, &added);
        let s = self.seq_mut(id)?;
        s.backed.extend(added);
        s.len = want;
        Ok(())
    }

    /// Copies the first `rows` positions of pool page `from` to page `to` in every layer.
    fn copy_page(&self, gpu: &Gpu, from: u32, to: u32, rows: usize) {
        let row_bytes = self.kv_dim as u64 * kv_value_bytes(self.kv);
        let page_bytes = self.page as u64 * row_bytes;
        let bytes = rows as u64 * row_bytes;
        if bytes == 0 {
            return;
        }
        // A copy within one buffer is not allowed: through a staging buffer with a region per
        // layer's keys and values, every region written once and read once (no reuse of one
        // region between copies for the device to order).
        let regions = 2 * self.layers.len() as u64;
        let staging = gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("copied KV page"),
            size: regions * bytes,
            usage: wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut enc = gpu.device.create_command_encoder(&Default::default());
        let pools = || self.layers.iter().flat_map(|(k, v)| [k, v]).enumerate();
        for (i, t) in pools() {
            let at = t.offset + u64::from(from) * page_bytes;
            enc.copy_buffer_to_buffer(&t.buffer, at, &staging, i as u64 * bytes, bytes);
        }
        for (i, t) in pools() {
            let at = t.offset + u64::from(to) * page_bytes;
            enc.copy_buffer_to_buffer(&staging, i as u64 * bytes, &t.buffer, at, bytes);
        }
        // Queue order puts the copy before any later submit's reads and writes.
        gpu.queue.submit([enc.finish()]);
    }

    /// Keeps positions `..len` of `id` (no-op past the end); whole pages past it lose this
    /// sequence's reference.
    pub fn truncate(&mut self, id: SeqId, len: usize) -> Result<(), GpuError> {
        let page = self.page;
        let s = self.seq_mut(id)?;
        s.len = s.len.min(len);
        let keep = s.len.div_ceil(page).min(s.backed.len());
        let dropped: Vec<u32> = s.backed.drain(keep..).collect();
        for p in dropped {
            self.release_page(p);
        }
        Ok(())
    }
}

/// One sequence of a [`KvPool`] as the single-row (GEMV) forward binds it: each layer with
/// the sequence's own stretch of the page table.
pub(crate) struct SeqKv<'a> {
    pool: &'a KvPool,
    table: Tensor,
}

impl SeqKv<'_> {
    /// Positions the sequence can hold.
    pub(crate) fn capacity(&self) -> usize {
        self.pool.seq_capacity()
    }

    /// Layer `i` as the attention kernels bind it.
    pub(crate) fn layer(&self, i: usize) -> KvLayer<'_> {
        KvLayer {
            pages: &self.table,
            ..self.pool.layer_all(i)
        }
    }
}

impl KvPool {
    /// Sequence `id` as the single-row forward binds it.
    pub(crate) fn seq_kv(&self, id: SeqId) -> SeqKv<'_> {
        SeqKv {
            pool: self,
            table: self.seq_table(id),
        }
    }
}

/// A single sequence's paged KV cache: a [`KvPool`] of one slot holding its whole capacity.
pub struct KvCache {
    pool: KvPool,
    seq: SeqId,
    /// The sequence's stretch of the table, as the decode kernels bind it.
    table: Tensor,
}

impl KvCache {
    /// A cache of `capacity` positions in pages of `page` positions (a positive multiple of
    /// 64) of `kv` values (one of [`KV_TYPES`]) for the model `cfg`.
    pub fn new(
        gpu: &Gpu,
        cfg: &ModelConfig,
        capacity: usize,
        (page, kv): (usize, GgmlType),
    ) -> Result<KvCache, GpuError> {
        if capacity == 0 || page == 0 || !page.is_multiple_of(DEFAULT_PAGE) {
            return Err(shape(format!(
                "a KV cache of {capacity} positions in pages of {page} (a positive multiple of \
                 {DEFAULT_PAGE})"
            )));
        }
        let pages = capacity.div_ceil(page);
        let mut pool = KvPool::new(gpu, cfg, (1, capacity), pages, (page, kv))?;
        let seq = pool.open()?;
        let table = pool.seq_table(seq);
        Ok(KvCache { pool, seq, table })
    }

    /// Whether this cache has the layers and KV width of model `cfg`.
    pub fn fits(&self, cfg: &ModelConfig) -> bool {
        self.pool.fits(cfg)
    }

    /// Positions the cache can hold.
    pub fn capacity(&self) -> usize {
        self.pool.seq_capacity()
    }

    /// Positions filled (the sequence so far).
    pub fn len(&self) -> usize {
        self.pool.len(self.seq).unwrap_or(0)
    }

    /// Whether no position is filled.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Positions per page.
    pub fn page(&self) -> usize {
        self.pool.page()
    }

    /// The element type the cache holds.
    pub fn kv_type(&self) -> GgmlType {
        self.pool.kv_type()
    }

    /// Pool page of each backed logical page, in order.
    pub fn page_table(&self) -> &[u32] {
        self.pool.page_table(self.seq).unwrap_or(&[])
    }

    /// Layer `i` as the attention kernels bind it.
    pub(crate) fn layer(&self, i: usize) -> KvLayer<'_> {
        KvLayer {
            pages: &self.table,
            ..self.pool.layer_all(i)
        }
    }

    /// The cache's sequence as the single-row forward binds it.
    pub(crate) fn seq_kv(&self) -> SeqKv<'_> {
        SeqKv {
            pool: &self.pool,
            table: self.table.clone(),
        }
    }

    /// Backs positions `len..len + n` with pages (writing the new table entries) and counts
    /// them as filled: the caller records the work that fills them next.
    pub(crate) fn extend(&mut self, gpu: &Gpu, n: usize) -> Result<(), GpuError> {
        self.pool.extend(gpu, self.seq, n)
    }

    /// Keeps positions `..len` (no-op past the end); whole pages past it go back to the free
    /// list.
    pub fn truncate(&mut self, len: usize) {
        // The cache's own sequence is always open.
        let _ = self.pool.truncate(self.seq, len);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn cache_types_parse_and_size_their_pools() {
        assert_eq!(parse_kv_type("f16"), Ok(GgmlType::F16));
        assert_eq!(parse_kv_type(" F32 "), Ok(GgmlType::F32));
        for bad in ["q8_0", "bf16", "", "f64"] {
            let e = parse_kv_type(bad).unwrap_err();
            assert!(e.contains("f32 or f16") && e.contains(bad), "{e}");
        }
        assert_eq!(check_kv_type(GgmlType::F16).unwrap(), GgmlType::F16);
        assert_eq!(
            check_kv_type(GgmlType::Q8_0).unwrap_err().code(),
            "BAD_REQUEST"
        );
        let (bytes, _) = gpuport_testing::tiny_llm::build();
        let g = gpuport_gguf::Gguf::parse(bytes).unwrap();
        let cfg = ModelConfig::from_gguf(&g).unwrap();
        // 100 positions take two pages of 64: layers × 128 positions × keys and values.
        let f32_bytes = pool_bytes(&cfg, 100, DEFAULT_PAGE, GgmlType::F32);
        assert_eq!(f32_bytes, (2 * cfg.layers * 128 * cfg.kv_dim() * 4) as u64);
        assert_eq!(
            pool_bytes(&cfg, 100, DEFAULT_PAGE, GgmlType::F16),
            f32_bytes / 2
        );
    }
}
