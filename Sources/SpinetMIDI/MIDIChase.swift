/// The state a MIDI file's music has at a frame, as the messages that put an
/// instrument there: what a player sends before it goes on from a point other
/// than the start (`--start`, a seek).
///
/// - **SysEx:** the last reset (GM System On/Off, GM2 System On, GS Reset, XG
///   System On) before the frame and every SysEx after it, in file order; a
///   System Reset message (FF) clears them too. What came before the last
///   reset is what the reset undid.
/// - **Channels:** `ChannelState`'s one rule (Bank Select, program,
///   controllers, pitch bend, pressure; Reset All Controllers and the resets
///   forget what they reset), in its replay order.
/// - **RPNs**, which `ChannelState` does not keep (a Data Entry means nothing
///   out of its sequence): for pitch-bend range (RPN 0), fine tuning (1) and
///   coarse tuning (2), the RPN number and the Data Entry values last set,
///   then the parameter number the file had selected at the frame (an RPN or
///   an NRPN, or none), so a later Data Entry goes where it would have.
///   Data Increment and Decrement are not followed.
/// - **Tempo:** the tempo in effect at the frame.
///
/// Notes are not part of the state: a note struck before the frame is not
/// struck again.
public struct MIDIChase: Sendable {
    /// Complete SysEx messages (F0 ... F7) to send first, in order.
    public var sysEx: [[UInt8]] = []
    /// Channel messages to send after the SysEx, in order.
    public var messages: [MIDIMessage] = []
    /// The tempo at the frame in microseconds per quarter (nil: SMPTE time, no tempo).
    public var microsecondsPerQuarter: Int?
    /// The index in `schedule.events` of the first event at or after the frame.
    public var nextEvent = 0

    /// The RPNs followed: pitch-bend range, fine and coarse tuning.
    public static let followedRPNs = 0...2

    /// The state of `schedule` at `frame`, for `channels` channels (16 per port).
    public init(_ schedule: MIDISchedule, at frame: Int64, channels: Int = 16) {
        let channels = max(channels, 1)
        var state = ChannelState(channels: channels)
        var rpn = RPNState(channels: channels)
        var sysEx: [[UInt8]] = []
        var i = 0
        let events = schedule.events
        while i < events.count && events[i].frame < frame {
            switch events[i].kind {
            case .message(let m):
                state.remember(m)
                rpn.remember(m)
                if case .systemReset = m { sysEx.removeAll() }
            case .sysEx(let index):
                let bytes = schedule.sysEx[index]
                let reset = bytes.withUnsafeBufferPointer { b -> Bool in
                    switch SysExKind(b) {
                    case .gmSystemOn, .gmSystemOff, .gm2SystemOn, .gsReset, .xgSystemOn: return true
                    default: return false
                    }
                }
                if reset {
                    sysEx.removeAll()
                    bytes.withUnsafeBufferPointer { state.remember(sysEx: $0) }
                    rpn.forgetAll()
                }
                sysEx.append(bytes)
            }
            i += 1
        }
        nextEvent = i
        self.sysEx = sysEx
        var messages: [MIDIMessage] = []
        state.replay { messages.append($0) }
        rpn.replay { messages.append($0) }
        self.messages = messages
        if let last = schedule.tempoChanges.last(where: { $0.frame <= frame }) ?? schedule.tempoChanges.first {
            microsecondsPerQuarter = last.microsecondsPerQuarter
        }
    }
}

/// Per channel: the values of the followed RPNs and the parameter number
/// selected (see `MIDIChase`).
struct RPNState {
    /// Per channel: the RPN/NRPN number bytes (101, 100, 99, 98) last set, -1 = never.
    private var numbers: [[Int]]
    /// Per channel: which kind was selected last: 0 none, 1 RPN, 2 NRPN.
    private var selected: [Int]
    /// Per channel and followed RPN: Data Entry MSB and LSB, -1 = never.
    private var values: [[(msb: Int, lsb: Int)]]

    init(channels: Int) {
        numbers = Array(repeating: [-1, -1, -1, -1], count: channels)
        selected = Array(repeating: 0, count: channels)
        values = Array(repeating: Array(repeating: (-1, -1), count: MIDIChase.followedRPNs.count), count: channels)
    }

    mutating func forgetAll() { self = RPNState(channels: numbers.count) }

    /// The followed RPN selected on channel `c`, if any.
    private func currentRPN(_ c: Int) -> Int? {
        guard selected[c] == 1, numbers[c][0] == 0, MIDIChase.followedRPNs.contains(numbers[c][1]) else { return nil }
        return numbers[c][1]
    }

    mutating func remember(_ m: MIDIMessage) {
        switch m {
        case .systemReset:
            forgetAll()
        case .controlChange(let ch, let n, let v):
            let c = Int(ch)
            guard c < numbers.count else { return }
            switch n {
            case MIDIController.rpnMSB: numbers[c][0] = Int(v); selected[c] = 1
            case MIDIController.rpnLSB: numbers[c][1] = Int(v); selected[c] = 1
            case MIDIController.nrpnMSB: numbers[c][2] = Int(v); selected[c] = 2
            case MIDIController.nrpnLSB: numbers[c][3] = Int(v); selected[c] = 2
            case MIDIController.resetAllControllers:
                // RP-015: the parameter number goes to null; the values stay.
                numbers[c] = [127, 127, 127, 127]
                selected[c] = 0
            case MIDIController.dataEntryMSB:
                // A new MSB stands alone until an LSB follows.
                if let r = currentRPN(c) { values[c][r] = (Int(v), -1) }
            case MIDIController.dataEntryLSB:
                if let r = currentRPN(c), values[c][r].msb >= 0 { values[c][r].lsb = Int(v) }
            default: return
            }
        default: return
        }
    }

    func replay(_ emit: (MIDIMessage) -> Void) {
        for c in 0..<numbers.count {
            let ch = UInt8(truncatingIfNeeded: c)
            func cc(_ n: UInt8, _ v: Int) { emit(.controlChange(channel: ch, controller: n, value: UInt8(v & 0x7F))) }
            var wrote = false
            for r in MIDIChase.followedRPNs where values[c][r].msb >= 0 {
                cc(MIDIController.rpnMSB, 0)
                cc(MIDIController.rpnLSB, r)
                cc(MIDIController.dataEntryMSB, values[c][r].msb)
                if values[c][r].lsb >= 0 { cc(MIDIController.dataEntryLSB, values[c][r].lsb) }
                wrote = true
            }
            let n = numbers[c]
            switch selected[c] {
            case 1 where n[0] >= 0 || n[1] >= 0:
                cc(MIDIController.rpnMSB, n[0] >= 0 ? n[0] : 127)
                cc(MIDIController.rpnLSB, n[1] >= 0 ? n[1] : 127)
            case 2 where n[2] >= 0 || n[3] >= 0:
                cc(MIDIController.nrpnMSB, n[2] >= 0 ? n[2] : 127)
                cc(MIDIController.nrpnLSB, n[3] >= 0 ? n[3] : 127)
            default:
                if wrote || n[0] >= 0 {
                    // none selected: the null RPN, as after Reset All Controllers
                    cc(MIDIController.rpnMSB, 127)
                    cc(MIDIController.rpnLSB, 127)
                }
            }
        }
    }
}
