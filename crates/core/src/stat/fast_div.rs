//! Division by a constant known only at run time, without a `div` instruction.
//!
//! Window arithmetic divides every timestamp by the bucket length (500 ms by default) and every window
//! index by the sample count; this does it by multiplying by a precomputed reciprocal and correcting
//! once.

// A hardware 64-bit division costs tens of cycles, several times per entry; the multiplication and
// the correction cost a few.

/// `x / d` and `x % d` for a fixed `d ≥ 1`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FastDiv {
    d: u64,
    /// `floor((2^64 − 1) / d)`, or 0 when `d` is a power of two (then `shift` is used).
    m: u64,
    shift: u32,
}

impl FastDiv {
    pub(crate) const fn new(d: u64) -> Self {
        let d = if d == 0 { 1 } else { d };
        if d.is_power_of_two() {
            FastDiv {
                d,
                m: 0,
                shift: d.trailing_zeros(),
            }
        } else {
            FastDiv {
                d,
                m: u64::MAX / d,
                shift: 0,
            }
        }
    }

    /// `x / d`. With `m = floor((2^64 − 1)/d)` the high half of `x·m` is the quotient or one less.
    #[inline]
    pub(crate) const fn div(&self, x: u64) -> u64 {
        if self.m == 0 {
            return x >> self.shift;
        }
        let q = ((x as u128 * self.m as u128) >> 64) as u64;
        if x - q * self.d >= self.d { q + 1 } else { q }
    }

    /// `x % d`.
    #[inline]
    pub(crate) const fn rem(&self, x: u64) -> u64 {
        x - self.div(x) * self.d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_hardware_division() {
        for d in [
            1u64,
            2,
            3,
            7,
            10,
            60,
            100,
            250,
            500,
            1000,
            1024,
            60_000,
            u64::MAX / 3,
            u64::MAX,
        ] {
            let f = FastDiv::new(d);
            let samples = [
                0u64,
                1,
                2,
                d - 1,
                d,
                d.saturating_add(1),
                999,
                1_700_000_000_123,
                u64::MAX / 2,
                u64::MAX - 1,
                u64::MAX,
            ];
            for x in samples {
                assert_eq!(f.div(x), x / d, "{x} / {d}");
                assert_eq!(f.rem(x), x % d, "{x} % {d}");
            }
            let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
            for _ in 0..10_000 {
                x = x
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                assert_eq!(f.div(x), x / d);
            }
        }
    }
}
