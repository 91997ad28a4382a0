//! PCG32 (O'Neill's XSH-RR 64/32), seeded like `pcg32_srandom_r` (CONTRACT.md section 1).
//! Ports must reproduce it bit for bit.

/// The LCG multiplier.
pub const MULTIPLIER: u64 = 6364136223846793005;
/// The `initseq` of every request stream: `request_rng(seed) = Pcg32::new(seed, REQUEST_STREAM)`.
pub const REQUEST_STREAM: u64 = 54;
/// `2^-32`, exact: `random()` is always in `[0, 1)`.
const TO_UNIT: f64 = 1.0 / 4294967296.0;

/// A PCG32 generator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pcg32 {
    state: u64,
    inc: u64,
}

impl Pcg32 {
    /// `Pcg32(initstate, initseq)`, seeded like `pcg32_srandom_r`.
    pub fn new(initstate: u64, initseq: u64) -> Self {
        let mut rng = Pcg32 {
            state: 0,
            inc: (initseq << 1) | 1,
        };
        rng.step();
        rng.state = rng.state.wrapping_add(initstate);
        rng.step();
        rng
    }

    fn step(&mut self) {
        self.state = self.state.wrapping_mul(MULTIPLIER).wrapping_add(self.inc);
    }

    /// The next 32-bit output.
    pub fn next_u32(&mut self) -> u32 {
        let old = self.state;
        self.step();
        let xorshifted = (((old >> 18) ^ old) >> 27) as u32;
        let rot = (old >> 59) as u32;
        xorshifted.rotate_right(rot)
    }

    /// A uniform in `[0, 1)`: `next_u32() * 2^-32` (one output per uniform).
    pub fn random(&mut self) -> f64 {
        f64::from(self.next_u32()) * TO_UNIT
    }
}

/// The request stream for `seed`: `Pcg32::new(seed, REQUEST_STREAM)`.
pub fn request_rng(seed: u64) -> Pcg32 {
    Pcg32::new(seed, REQUEST_STREAM)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pcg32_reference_vector() {
        let mut rng = Pcg32::new(42, 54);
        let got: Vec<u32> = (0..6).map(|_| rng.next_u32()).collect();
        assert_eq!(
            got,
            vec![0xa15c02b7, 0x7b47f409, 0xba1d3330, 0x83d2f293, 0xbfa4784b, 0xcbed606e]
        );
    }

    #[test]
    fn uniforms_are_outputs_times_two_to_minus_32() {
        let mut a = Pcg32::new(42, 54);
        let mut b = Pcg32::new(42, 54);
        for _ in 0..100 {
            let u = a.random();
            assert!((0.0..1.0).contains(&u));
            assert_eq!(u, b.next_u32() as f64 / 4294967296.0);
        }
        assert_eq!(
            Pcg32::new(42, 54).random(),
            0xa15c02b7u32 as f64 / 4294967296.0
        );
    }

    #[test]
    fn request_rng_is_stream_54() {
        assert_eq!(request_rng(42), Pcg32::new(42, 54));
        assert_ne!(request_rng(42), Pcg32::new(42, 55));
    }

    #[test]
    fn extreme_seeds_wrap() {
        let mut rng = Pcg32::new(u64::MAX, u64::MAX);
        let _ = rng.next_u32();
        let mut rng0 = Pcg32::new(0, 0);
        let _ = rng0.next_u32();
    }
}
