//! Seeded data: one xorshift64 generator for every test (a failing case prints its seed so it
//! can be replayed).

/// xorshift64 (Marsaglia's 13/7/17 triple).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator whose state is `seed` scrambled (any seed, 0 included, gives a good stream).
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// A generator started at exactly `state | 1` (the streams [`random_f32`] has always made).
    pub fn from_state(state: u64) -> Rng {
        Rng(state | 1)
    }

    fn step(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// The next 56-bit value.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.step() >> 8
    }

    /// A value in `0..n` (`0` when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// A value in [-1, 1) on a grid of 2⁻²³.
    pub fn signed_unit(&mut self) -> f32 {
        (self.step() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
}

/// `n` deterministic f32 values in [-1, 1).
pub fn random_f32(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = Rng::from_state(seed);
    (0..n).map(|_| rng.signed_unit()).collect()
}

/// `len` deterministic bytes.
pub fn bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    (0..len).map(|_| rng.next() as u8).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_seeded_and_in_range() {
        assert_eq!(random_f32(64, 7), random_f32(64, 7));
        assert_ne!(random_f32(64, 7), random_f32(64, 8));
        assert!(random_f32(4096, 3).iter().all(|v| (-1.0..1.0).contains(v)));
        let mut r = Rng::new(0);
        assert!((0..1000).all(|_| r.below(10) < 10));
        assert_eq!(Rng::new(5).below(0), 0);
    }
}
