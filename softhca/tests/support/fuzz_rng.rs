//! The fixed-seed generator of the hostile-peer fuzz tests (softhca's and the engine's,
//! which includes this file by path): every run feeds the same inputs, and
//! `HOSTILE_SEED` picks another seed to reproduce or widen a run.

/// xorshift64*.
pub struct Rng(pub u64);

impl Rng {
    /// The seed from `HOSTILE_SEED` (decimal or 0x-hex) if set, else `default`.
    pub fn seeded(default: u64) -> Rng {
        let seed = std::env::var("HOSTILE_SEED")
            .ok()
            .and_then(|s| match s.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16).ok(),
                None => s.parse().ok(),
            })
            .unwrap_or(default);
        eprintln!("seed {seed:#x} (HOSTILE_SEED overrides)");
        Rng(seed.max(1))
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }

    pub fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.below(from.len() as u64) as usize]
    }
}
