/// Sample formats Spinet writes to a device, in the order it asks for them:
/// float first (no conversion loss), then the widest integer.
public enum DeviceSampleFormat: CaseIterable, Sendable, CustomStringConvertible {
    case float32, int32, int24, int24Packed, int16

    public var bytesPerSample: Int {
        switch self {
        case .float32, .int32, .int24: return 4
        case .int24Packed: return 3
        case .int16: return 2
        }
    }

    /// ALSA's name for the format.
    public var description: String {
        switch self {
        case .float32: return "FLOAT_LE"
        case .int32: return "S32_LE"
        case .int24: return "S24_LE"
        case .int24Packed: return "S24_3LE"
        case .int16: return "S16_LE"
        }
    }
}

/// Converts the engine's planar Float32 to a device's interleaved format.
///
/// Render thread: no allocation, no lock. Input is within [-1, 1] (the
/// limiter's ceiling); anything outside is clamped. 16-bit output gets TPDF
/// dither (2 LSB peak to peak) from a small xorshift generator.
struct SampleConverter {
    let format: DeviceSampleFormat
    /// Device channels: 1 gets the mono sum, 2 gets left and right, more get
    /// left and right on the first two and silence on the rest.
    let channels: Int
    private var dither: UInt64 = 0x9E37_79B9_7F4A_7C15

    init(format: DeviceSampleFormat, channels: Int) {
        self.format = format
        self.channels = max(channels, 1)
    }

    var bytesPerFrame: Int { format.bytesPerSample * channels }

    /// Writes `frames` frames to `out` (which holds `frames * bytesPerFrame` bytes).
    mutating func convert(left: UnsafePointer<Float>, right: UnsafePointer<Float>, frames: Int,
                          into out: UnsafeMutableRawPointer) {
        let ch = channels
        for i in 0..<frames {
            var l = left[i], r = right[i]
            if ch == 1 { l = (l + r) * 0.5; r = l }
            let base = i * ch
            for c in 0..<ch {
                let x: Float = c == 0 ? l : (c == 1 ? r : 0)
                store(x, at: base + c, out)
            }
        }
    }

    @inline(__always)
    private mutating func store(_ x0: Float, at index: Int, _ out: UnsafeMutableRawPointer) {
        let x = x0.isFinite ? max(-1, min(1, x0)) : 0
        switch format {
        case .float32:
            out.storeBytes(of: x, toByteOffset: index * 4, as: Float.self)
        case .int32:
            let v = Double(x) * 2_147_483_647.0
            out.storeBytes(of: Int32(max(-2_147_483_648, min(2_147_483_647, v.rounded()))), toByteOffset: index * 4, as: Int32.self)
        case .int24:
            out.storeBytes(of: Self.int24(x), toByteOffset: index * 4, as: Int32.self)
        case .int24Packed:
            let v = UInt32(bitPattern: Self.int24(x))
            let p = out + index * 3
            p.storeBytes(of: UInt8(v & 0xFF), as: UInt8.self)
            (p + 1).storeBytes(of: UInt8((v >> 8) & 0xFF), as: UInt8.self)
            (p + 2).storeBytes(of: UInt8((v >> 16) & 0xFF), as: UInt8.self)
        case .int16:
            let d = nextUniform() - nextUniform()
            let v = (x * 32767 + d).rounded()
            out.storeBytes(of: Int16(max(-32768, min(32767, v))), toByteOffset: index * 2, as: Int16.self)
        }
    }

    @inline(__always)
    static func int24(_ x: Float) -> Int32 {
        let v = (Double(x) * 8_388_607).rounded()
        return Int32(max(-8_388_608, min(8_388_607, v)))
    }

    @inline(__always)
    private mutating func nextUniform() -> Float {
        dither ^= dither >> 12
        dither ^= dither << 25
        dither ^= dither >> 27
        let r = dither &* 0x2545_F491_4F6C_DD1D
        return Float(r >> 40) * (1.0 / 16_777_216.0)
    }
}
