//! A buffer pool: released buffers are kept by (size class, usage) and handed out again, so a
//! decode loop allocates nothing after its first step.

use std::collections::HashMap;

use parking_lot::Mutex;

/// The size class of a request: powers of two up to 1 MiB, then whole MiB, so reuse wastes at
/// most half of a small buffer and under 1 MiB of a large one.
pub fn size_class(bytes: u64) -> u64 {
    const MIB: u64 = 1 << 20;
    let bytes = bytes.max(256);
    if bytes <= MIB {
        bytes.next_power_of_two()
    } else {
        bytes.div_ceil(MIB) * MIB
    }
}

/// Released buffers by (size class, usage bits).
#[derive(Default)]
pub struct BufferPool {
    free: Mutex<HashMap<(u64, u32), Vec<wgpu::Buffer>>>,
}

impl BufferPool {
    /// A free buffer of at least `bytes` with `usage`, or `None` (allocate a new one).
    pub fn take(&self, bytes: u64, usage: wgpu::BufferUsages) -> Option<wgpu::Buffer> {
        self.free
            .lock()
            .get_mut(&(size_class(bytes), usage.bits()))?
            .pop()
    }

    /// Keeps `buffer` for reuse.
    pub fn give(&self, buffer: wgpu::Buffer) {
        let key = (buffer.size(), buffer.usage().bits());
        self.free.lock().entry(key).or_default().push(buffer);
    }

    /// Buffers held for reuse.
    pub fn idle(&self) -> usize {
        self.free.lock().values().map(Vec::len).sum()
    }

    /// Drops every idle buffer.
    pub fn clear(&self) {
        self.free.lock().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::size_class;

    #[test]
    fn size_classes() {
        assert_eq!(size_class(1), 256);
        assert_eq!(size_class(257), 512);
        assert_eq!(size_class(1 << 20), 1 << 20);
        assert_eq!(size_class((1 << 20) + 1), 2 << 20);
        assert_eq!(size_class(5_000_000), 5 << 20);
    }
}
