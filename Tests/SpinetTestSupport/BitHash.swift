/// A 64-bit FNV-1a hash of samples' bit patterns: one number that changes
/// if any bit of any sample does (for tests that pin exact output).
public enum BitHash {
    public static func of(_ samples: [Float]) -> UInt64 {
        var h: UInt64 = 0xCBF2_9CE4_8422_2325
        for x in samples {
            var bits = x.bitPattern
            for _ in 0..<4 {
                h = (h ^ UInt64(bits & 0xFF)) &* 0x0000_0100_0000_01B3
                bits >>= 8
            }
        }
        return h
    }
}
