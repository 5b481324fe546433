import SpinetMIDI

/// Where each channel message goes: the engine's channel → unit routing as a
/// plain value, testable without audio.
///
/// It holds every channel's unit (`route`), its home (the unit `route` gave
/// it, which Bank Select routes move the channel away from and back to), the
/// last Bank Select MSB of each channel, the bank routes, mute and solo, and
/// the turn-taking of split channels (`route(channel:takingTurns:)`: each
/// key's notes take turns among the channel's *turn units*).
///
/// The engine asks it once per message, when a slice's events are gathered
/// (`resolve`), and files the message into the per-unit event lists the
/// answer names. Resolving changes state (bank moves, whose turn a key is),
/// so messages must be resolved in their order, each once.
///
/// Units are bits of a `UInt64` (an engine holds at most 64 units).
/// `resolve` allocates nothing (the arrays are sized in `init` and only
/// written in place), so the render thread may call it.
public struct ChannelRouter: Equatable, Sendable {
    public let channelCount: Int
    /// channel -> unit index (or -1 for none): where the channel's events go now
    private var routing: [Int]
    /// channel -> the unit `route` assigned (bank routes switch away from and back to it)
    private var home: [Int]
    /// channel -> last Bank Select MSB seen
    private var bankMSB: [UInt8]
    /// bank MSB -> unit index, for banks that select a unit (-1: none)
    private var bankRoutes: [Int]
    /// channel * 128 + bank MSB -> unit index, a bank route of one channel
    /// only, before `bankRoutes` (-1: none; stems give each channel a synth)
    private var channelBankRoutes: [Int]
    /// channel -> muted (by the muted channels, or by another channel's solo)
    private var muted: [Bool]
    /// channel -> bit u: unit u takes turns playing the channel's notes (0: not split)
    private var turnUnits: [UInt64]
    /// channel * 128 + key -> the key always plays on the channel's home unit
    private var fixedKey: [Bool]
    /// channel * 128 + key -> the unit that got the key's last note-on (-1: none yet)
    private var keyTurn: [Int]

    /// Where one message goes, as unit bit masks.
    public struct Destination: Equatable, Sendable {
        /// Units that get, just before the message and at its frame,
        /// Sustain 0, Sostenuto 0 and All Notes Off on its channel: a
        /// Bank Select route moved the channel away from them.
        public var leaving: UInt64 = 0
        /// Units that get a note-off (velocity 64) for the message's key at
        /// its frame: the unit that played the key's previous note, when a
        /// split channel's note-on takes its turn on another unit.
        public var release: UInt64 = 0
        /// Units that get the message itself.
        public var units: UInt64 = 0

        public init(leaving: UInt64 = 0, release: UInt64 = 0, units: UInt64 = 0) {
            self.leaving = leaving
            self.release = release
            self.units = units
        }
    }

    /// `channels` global channels (16 per port), none routed.
    /// `muted`/`solo`: global channel numbers (out-of-range ones are ignored);
    /// when any channel is soloed, every other channel is muted.
    public init(channels: Int, muted mutedChannels: [Int] = [], solo soloChannels: [Int] = []) {
        channelCount = channels
        routing = Array(repeating: -1, count: channels)
        home = Array(repeating: -1, count: channels)
        bankMSB = Array(repeating: 0, count: channels)
        bankRoutes = Array(repeating: -1, count: 128)
        channelBankRoutes = Array(repeating: -1, count: channels * 128)
        turnUnits = Array(repeating: 0, count: channels)
        fixedKey = Array(repeating: false, count: channels * 128)
        keyTurn = Array(repeating: -1, count: channels * 128)
        let solo = soloChannels.filter { $0 >= 0 && $0 < channels }
        muted = (0..<channels).map { mutedChannels.contains($0) || (!solo.isEmpty && !solo.contains($0)) }
    }

    // MARK: setting up (control thread)

    /// Routes a global channel to a unit (nil: nowhere), as its home; ends any split.
    public mutating func route(channel: Int, to unit: Int?) {
        precondition(channel >= 0 && channel < channelCount)
        routing[channel] = unit ?? -1
        home[channel] = unit ?? -1
        turnUnits[channel] = 0
        for k in 0..<128 { fixedKey[channel * 128 + k] = false }
    }

    /// Splits a channel over `units` (see `Engine.route(channel:takingTurns:fixedKeys:)`):
    /// `units[0]` is its home and plays `fixedKeys`.
    public mutating func route(channel: Int, takingTurns units: [Int], fixedKeys: [Int] = []) {
        precondition(channel >= 0 && channel < channelCount && !units.isEmpty)
        precondition(units.allSatisfy { $0 >= 0 && $0 < 64 })
        route(channel: channel, to: units[0])
        if units.count == 1 { return }
        for u in units { turnUnits[channel] |= UInt64(1) << UInt64(u) }
        for k in fixedKeys where k >= 0 && k < 128 { fixedKey[channel * 128 + k] = true }
    }

    /// Makes a Bank Select MSB choose a unit (see `Engine.routeBank`).
    public mutating func routeBank(msb: UInt8, to unit: Int) {
        bankRoutes[Int(msb & 0x7F)] = unit
    }

    /// Makes a Bank Select MSB choose a unit for one channel, before any
    /// route of that bank for every channel.
    public mutating func routeBank(msb: UInt8, channel: Int, to unit: Int) {
        precondition(channel >= 0 && channel < channelCount)
        channelBankRoutes[channel * 128 + Int(msb & 0x7F)] = unit
    }

    // MARK: reading

    /// The unit a channel's events go to now (nil: none).
    public func unit(forChannel channel: Int) -> Int? {
        let u = routing[channel]
        return u >= 0 ? u : nil
    }

    /// The unit `route` gave a channel (nil: none).
    public func homeUnit(forChannel channel: Int) -> Int? {
        let u = home[channel]
        return u >= 0 ? u : nil
    }

    /// Bit u: unit u takes turns playing the channel's notes (0: not split).
    public func turnUnits(forChannel channel: Int) -> UInt64 { turnUnits[channel] }

    /// Whether the channel's note-ons are dropped (mute, or another channel's solo).
    public func isMuted(channel: Int) -> Bool { muted[channel] }

    /// The unit after `unit` in `mask` (cyclic).
    @inline(__always)
    public static func nextTurn(after unit: Int, in mask: UInt64) -> Int {
        let higher = unit >= 63 ? 0 : mask & ~((UInt64(2) << UInt64(unit)) &- 1)
        return higher != 0 ? higher.trailingZeroBitCount : mask.trailingZeroBitCount
    }

    // MARK: resolving (render thread)

    /// Where a channel message goes, applying what it changes: a Bank Select
    /// MSB is remembered; a Program Change moves the channel to the unit its
    /// bank selects (or back home), and the unit it leaves gets its pedals
    /// up and All Notes Off (only when `roomForLeaving`: the slice has room
    /// for those three events; the move happens either way). On a split
    /// channel at home, a key's note-ons take turns (the key's previous note
    /// is released where it played), its note-offs and pressure follow its
    /// last note-on, and every other message goes to every turn unit. A
    /// muted channel's note-ons go nowhere.
    ///
    /// `message.channel` must not be nil (other messages go to every unit).
    public mutating func resolve(_ message: MIDIMessage, roomForLeaving: Bool) -> Destination {
        var d = Destination()
        guard let ch = message.channel else { return d }
        let c = Int(ch) % channelCount
        if case .controlChange(_, let controller, let value) = message, controller == MIDIController.bankSelectMSB {
            bankMSB[c] = value
        } else if case .programChange = message {
            let own = channelBankRoutes[c * 128 + Int(bankMSB[c])]
            let bankUnit = own >= 0 ? own : bankRoutes[Int(bankMSB[c])]
            let target = bankUnit >= 0 ? bankUnit : home[c]
            let old = routing[c]
            if target != old && target >= 0 {
                routing[c] = target
                if old >= 0 && roomForLeaving {
                    // (a split channel leaving home: every turn unit)
                    d.leaving = turnUnits[c] != 0 && old == home[c] ? turnUnits[c] : UInt64(1) << UInt64(old)
                }
            }
        }
        var unit = routing[c]
        var everyTurn = false
        if turnUnits[c] != 0 && unit == home[c] {
            switch message {
            case .noteOn(_, let key, let velocity) where velocity > 0:
                let k = c * 128 + Int(key & 0x7F)
                if !fixedKey[k] && !muted[c] {
                    let last = keyTurn[k]
                    unit = last < 0 ? unit : Self.nextTurn(after: last, in: turnUnits[c])
                    if last >= 0 && last != unit { d.release = UInt64(1) << UInt64(last) }
                    keyTurn[k] = unit
                }
            case .noteOn(_, let key, _), .noteOff(_, let key, _), .polyPressure(_, let key, _):
                let k = c * 128 + Int(key & 0x7F)
                if !fixedKey[k] && keyTurn[k] >= 0 { unit = keyTurn[k] }
            default:
                everyTurn = true
            }
        }
        if everyTurn {
            d.units = turnUnits[c]
        } else if unit >= 0 && !(muted[c] && message.isNoteOn) {
            d.units = UInt64(1) << UInt64(unit)
        }
        return d
    }
}
