/// What the MIDI a channel was sent leaves behind, kept so that it can be
/// played again into an instrument that starts from scratch: a new
/// SoundFont swapped in, a plugin re-activated by its host, a core rebuilt
/// at a new sample rate. A DAW sends Bank Select and Program Change once, at
/// the start of a clip; without this a channel would fall back to piano.
///
/// The one rule, for every host and instrument:
/// - **Kept:** Bank Select (MSB and LSB), the program, every controller from
///   0 to 119 but the ones below, the pitch bend and the channel pressure.
/// - **Not kept:** Data Entry (6, 38), Data Increment and Decrement (96, 97)
///   and the (N)RPN numbers (98-101), which mean nothing out of their
///   sequence; the channel mode messages (120-127), which act and keep
///   nothing; notes and polyphonic pressure.
/// - **Reset All Controllers (121)** forgets what RP-015 says it resets: every
///   controller but Bank Select, volume (7), pan (10), the sound controllers
///   (70-79) and the effect depths (91-95); and the bend and the pressure.
/// - **System Reset (FF), GM System On/Off, GM2 System On, GS Reset and XG
///   System On** forget everything, on every channel.
/// - **Replay order**, per channel: Bank Select MSB, LSB, the program, the
///   other controllers in ascending order, the pitch bend, the pressure.
///
/// Its memory is allocated once, at `init`, and owned by the value (it is
/// not copyable): `remember` and `replay` allocate nothing, so both run on
/// a render thread.
public struct ChannelState: ~Copyable {
    /// Channels kept (16 per port).
    public let channels: Int
    /// Per channel: controllers 0-127, then program, bend, pressure; -1 = never set.
    private let values: UnsafeMutablePointer<Int16>
    private static let stride = 131
    private static let program = 128, bend = 129, pressure = 130

    public init(channels: Int = 16) {
        self.channels = max(channels, 1)
        values = .allocate(capacity: self.channels * Self.stride)
        values.initialize(repeating: -1, count: self.channels * Self.stride)
    }

    deinit { values.deallocate() }

    /// Whether controller `n` is kept (see the rule above).
    @inlinable public static func keeps(controller n: UInt8) -> Bool {
        switch n {
        case 6, 38, 96, 97, 98, 99, 100, 101: return false
        default: return n < 120
        }
    }

    /// Whether Reset All Controllers leaves controller `n` as it was (RP-015).
    @inlinable public static func survivesReset(controller n: UInt8) -> Bool {
        n == 0 || n == 32 || n == 7 || n == 10 || (70...79).contains(n) || (91...95).contains(n)
    }

    /// Keeps what `m` leaves behind. Render-thread safe.
    public mutating func remember(_ m: MIDIMessage) {
        switch m {
        case .controlChange(let c, let n, let v):
            guard Int(c) < channels else { return }
            let base = values + Int(c) * Self.stride
            if n == MIDIController.resetAllControllers {
                for k in 0..<128 where !Self.survivesReset(controller: UInt8(k)) { base[k] = -1 }
                base[Self.bend] = -1
                base[Self.pressure] = -1
            } else if Self.keeps(controller: n) {
                base[Int(n)] = Int16(v & 0x7F)
            }
        case .programChange(let c, let p):
            if Int(c) < channels { values[Int(c) * Self.stride + Self.program] = Int16(p & 0x7F) }
        case .pitchBend(let c, let v):
            if Int(c) < channels { values[Int(c) * Self.stride + Self.bend] = Int16(v & 0x3FFF) }
        case .channelPressure(let c, let p):
            if Int(c) < channels { values[Int(c) * Self.stride + Self.pressure] = Int16(p & 0x7F) }
        case .systemReset:
            forgetAll()
        case .noteOn, .noteOff, .polyPressure:
            return
        }
    }

    /// Forgets everything after a GM, GM2, GS or XG reset; other SysEx keeps nothing. Render-thread safe.
    public mutating func remember(sysEx bytes: UnsafeBufferPointer<UInt8>) {
        switch SysExKind(bytes) {
        case .gmSystemOn, .gmSystemOff, .gm2SystemOn, .gsReset, .xgSystemOn: forgetAll()
        default: return
        }
    }

    /// Forgets every channel's state (a restored plugin state, a reset).
    public mutating func forgetAll() {
        values.update(repeating: -1, count: channels * Self.stride)
    }

    /// How many messages `replay` gives at most.
    public var replayCapacity: Int { channels * (128 + 3) }

    /// Calls `emit` with the kept state as messages, channel by channel, in
    /// the replay order above. Render-thread safe (`emit` is not kept).
    public func replay(_ emit: (MIDIMessage) -> Void) {
        for c in 0..<channels {
            let base = values + c * Self.stride
            let ch = UInt8(truncatingIfNeeded: c)
            var k = 0
            while k <= 32 {     // Bank Select MSB (0), then LSB (32); no array on a render thread
                if base[k] >= 0 { emit(.controlChange(channel: ch, controller: UInt8(k), value: UInt8(base[k]))) }
                k += 32
            }
            if base[Self.program] >= 0 { emit(.programChange(channel: ch, program: UInt8(base[Self.program]))) }
            for k in 1..<120 where k != 32 && base[k] >= 0 {
                emit(.controlChange(channel: ch, controller: UInt8(k), value: UInt8(base[k])))
            }
            if base[Self.bend] >= 0 { emit(.pitchBend(channel: ch, value: UInt16(base[Self.bend]))) }
            if base[Self.pressure] >= 0 { emit(.channelPressure(channel: ch, pressure: UInt8(base[Self.pressure]))) }
        }
    }

    /// The value controller `n` has on a channel that was never sent
    /// anything (General MIDI, as FluidSynth starts): volume 100, pan,
    /// balance and the sound controllers (70-79) 64, expression 127, every
    /// other controller 0.
    public static func initialValue(controller n: UInt8) -> UInt8 {
        // comparisons, not a range pattern (its metadata allocates in unoptimized builds)
        if n == MIDIController.volume { return 100 }
        if n == MIDIController.expression { return 127 }
        if n == 8 || n == MIDIController.pan || (n >= 70 && n <= 79) { return 64 }
        return 0
    }

    /// Calls `emit` with the initial value (`initialValue`, program 0,
    /// bend centred, no pressure) of every value kept, in the replay order:
    /// what takes a channel back to where one never sent anything starts,
    /// without touching the notes sounding. Render-thread safe.
    public func replayInitialValues(_ emit: (MIDIMessage) -> Void) {
        for c in 0..<channels {
            let base = values + c * Self.stride
            let ch = UInt8(truncatingIfNeeded: c)
            var k = 0
            while k <= 32 {
                if base[k] >= 0 { emit(.controlChange(channel: ch, controller: UInt8(k), value: 0)) }
                k += 32
            }
            if base[Self.program] >= 0 { emit(.programChange(channel: ch, program: 0)) }
            for k in 1..<120 where k != 32 && base[k] >= 0 {
                emit(.controlChange(channel: ch, controller: UInt8(k), value: Self.initialValue(controller: UInt8(k))))
            }
            if base[Self.bend] >= 0 { emit(.pitchBend(channel: ch, value: 8192)) }
            if base[Self.pressure] >= 0 { emit(.channelPressure(channel: ch, pressure: 0)) }
        }
    }

    /// Takes `other`'s state (a core rebuilt at a new rate keeps what MIDI set).
    public mutating func copy(from other: borrowing ChannelState) {
        let n = min(channels, other.channels) * Self.stride
        values.update(from: other.values, count: n)
    }
}
