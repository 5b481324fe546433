import CALSA
import SpinetMIDI

/// Up to four channel messages decoded from one sequencer event (an RPN or
/// NRPN event becomes four controller messages), held inline so decoding
/// allocates nothing.
struct MessageBatch: Equatable {
    private(set) var count = 0
    private var m0 = MIDIMessage.systemReset, m1 = MIDIMessage.systemReset
    private var m2 = MIDIMessage.systemReset, m3 = MIDIMessage.systemReset

    init() {}
    init(_ m: MIDIMessage) { append(m) }

    mutating func append(_ m: MIDIMessage) {
        switch count {
        case 0: m0 = m
        case 1: m1 = m
        case 2: m2 = m
        case 3: m3 = m
        default: return
        }
        count += 1
    }

    subscript(i: Int) -> MIDIMessage {
        switch i {
        case 0: return m0
        case 1: return m1
        case 2: return m2
        default: return m3
        }
    }

    var messages: [MIDIMessage] { (0..<count).map { self[$0] } }

    static func == (a: MessageBatch, b: MessageBatch) -> Bool { a.messages == b.messages }
}

/// What one ALSA sequencer event means to Spinet.
enum SequencerInput: Equatable {
    /// Channel messages (or a reset) to play.
    case messages(MessageBatch)
    /// A note with a duration (SND_SEQ_EVENT_NOTE): on now, off after `milliseconds`.
    case timedNote(on: MIDIMessage, off: MIDIMessage, milliseconds: UInt32)
    /// A SysEx message or a piece of one; the bytes are read from the event.
    case sysEx
    case subscribed(sender: SequencerAddress, dest: SequencerAddress)
    case unsubscribed(sender: SequencerAddress, dest: SequencerAddress)
    case portStarted(SequencerAddress)
    case portChanged(SequencerAddress)
    case portExited(SequencerAddress)
    case clientStarted(UInt8)
    case clientExited(UInt8)
    /// MIDI clock: 24 ticks per quarter note (a DAW's tempo).
    case clock
    /// Start, Continue or Stop: the clock's ticks begin anew.
    case transport
    /// Song position, active sensing, echo, ...: nothing to play.
    case ignored
}

/// Turns ALSA sequencer events into Spinet's values.
///
/// `port` is the index of Spinet's input port the event arrived on: it
/// selects the block of 16 global channels (port * 16 + channel).
///
/// What ALSA's encoder makes of MIDI bytes is undone here: controller
/// pairs sent as one 14-bit CONTROL14 event become MSB (n) and LSB (n + 32)
/// controller messages; REGPARAM/NONREGPARAM (RPN/NRPN) events become the
/// four controllers 101/100 (99/98 for NRPN), 6 and 38; pitch bend -8192...8191
/// becomes 0...16383. Data are masked to 7 bits (14 for pitch bend).
enum SequencerDecoder {
    static func decode(_ ev: snd_seq_event_t, port: UInt8) -> SequencerInput {
        let type = Int32(ev.type)
        switch type {
        case Int32(SND_SEQ_EVENT_NOTEON.rawValue), Int32(SND_SEQ_EVENT_NOTEOFF.rawValue),
             Int32(SND_SEQ_EVENT_KEYPRESS.rawValue), Int32(SND_SEQ_EVENT_NOTE.rawValue):
            let n = ev.data.note
            let ch = channel(n.channel, port)
            let key = n.note & 0x7F, vel = n.velocity & 0x7F
            switch type {
            case Int32(SND_SEQ_EVENT_NOTEON.rawValue):
                return .messages(MessageBatch(.noteOn(channel: ch, key: key, velocity: vel)))
            case Int32(SND_SEQ_EVENT_NOTEOFF.rawValue):
                return .messages(MessageBatch(.noteOff(channel: ch, key: key, velocity: vel)))
            case Int32(SND_SEQ_EVENT_KEYPRESS.rawValue):
                return .messages(MessageBatch(.polyPressure(channel: ch, key: key, pressure: vel)))
            default:
                if vel == 0 { return .ignored }
                return .timedNote(on: .noteOn(channel: ch, key: key, velocity: vel),
                                  off: .noteOff(channel: ch, key: key, velocity: n.off_velocity & 0x7F),
                                  milliseconds: n.duration)
            }

        case Int32(SND_SEQ_EVENT_CONTROLLER.rawValue):
            let c = ev.data.control
            guard c.param < 128 else { return .ignored }
            return .messages(MessageBatch(.controlChange(channel: channel(c.channel, port),
                                                         controller: UInt8(c.param), value: data7(c.value))))
        case Int32(SND_SEQ_EVENT_PGMCHANGE.rawValue):
            let c = ev.data.control
            return .messages(MessageBatch(.programChange(channel: channel(c.channel, port), program: data7(c.value))))
        case Int32(SND_SEQ_EVENT_CHANPRESS.rawValue):
            let c = ev.data.control
            return .messages(MessageBatch(.channelPressure(channel: channel(c.channel, port), pressure: data7(c.value))))
        case Int32(SND_SEQ_EVENT_PITCHBEND.rawValue):
            let c = ev.data.control
            let v = max(0, min(16383, Int(c.value) + 8192))
            return .messages(MessageBatch(.pitchBend(channel: channel(c.channel, port), value: UInt16(v))))

        case Int32(SND_SEQ_EVENT_CONTROL14.rawValue):
            let c = ev.data.control
            let ch = channel(c.channel, port)
            var batch = MessageBatch()
            if c.param < 32 {
                let v = UInt32(bitPattern: c.value) & 0x3FFF
                batch.append(.controlChange(channel: ch, controller: UInt8(c.param), value: UInt8(v >> 7)))
                batch.append(.controlChange(channel: ch, controller: UInt8(c.param + 32), value: UInt8(v & 0x7F)))
            } else if c.param < 128 {
                batch.append(.controlChange(channel: ch, controller: UInt8(c.param), value: data7(c.value)))
            } else {
                return .ignored
            }
            return .messages(batch)
        case Int32(SND_SEQ_EVENT_REGPARAM.rawValue), Int32(SND_SEQ_EVENT_NONREGPARAM.rawValue):
            let c = ev.data.control
            let ch = channel(c.channel, port)
            let registered = type == Int32(SND_SEQ_EVENT_REGPARAM.rawValue)
            let p = c.param & 0x3FFF
            let v = UInt32(bitPattern: c.value) & 0x3FFF
            var batch = MessageBatch()
            batch.append(.controlChange(channel: ch, controller: registered ? MIDIController.rpnMSB : MIDIController.nrpnMSB, value: UInt8(p >> 7)))
            batch.append(.controlChange(channel: ch, controller: registered ? MIDIController.rpnLSB : MIDIController.nrpnLSB, value: UInt8(p & 0x7F)))
            batch.append(.controlChange(channel: ch, controller: MIDIController.dataEntryMSB, value: UInt8(v >> 7)))
            batch.append(.controlChange(channel: ch, controller: MIDIController.dataEntryLSB, value: UInt8(v & 0x7F)))
            return .messages(batch)

        case Int32(SND_SEQ_EVENT_SYSEX.rawValue):
            return .sysEx
        case Int32(SND_SEQ_EVENT_RESET.rawValue):
            return .messages(MessageBatch(.systemReset))

        case Int32(SND_SEQ_EVENT_PORT_SUBSCRIBED.rawValue):
            return .subscribed(sender: SequencerAddress(ev.data.connect.sender), dest: SequencerAddress(ev.data.connect.dest))
        case Int32(SND_SEQ_EVENT_PORT_UNSUBSCRIBED.rawValue):
            return .unsubscribed(sender: SequencerAddress(ev.data.connect.sender), dest: SequencerAddress(ev.data.connect.dest))
        case Int32(SND_SEQ_EVENT_PORT_START.rawValue):
            return .portStarted(SequencerAddress(ev.data.addr))
        case Int32(SND_SEQ_EVENT_PORT_CHANGE.rawValue):
            return .portChanged(SequencerAddress(ev.data.addr))
        case Int32(SND_SEQ_EVENT_PORT_EXIT.rawValue):
            return .portExited(SequencerAddress(ev.data.addr))
        case Int32(SND_SEQ_EVENT_CLIENT_START.rawValue):
            return .clientStarted(ev.data.addr.client)
        case Int32(SND_SEQ_EVENT_CLIENT_EXIT.rawValue):
            return .clientExited(ev.data.addr.client)
        case Int32(SND_SEQ_EVENT_CLOCK.rawValue):
            return .clock
        case Int32(SND_SEQ_EVENT_START.rawValue), Int32(SND_SEQ_EVENT_CONTINUE.rawValue), Int32(SND_SEQ_EVENT_STOP.rawValue):
            return .transport
        default:
            return .ignored
        }
    }

    @inline(__always)
    private static func channel(_ c: UInt8, _ port: UInt8) -> UInt8 {
        port &* 16 &+ (c & 0x0F)
    }

    @inline(__always)
    private static func data7(_ v: Int32) -> UInt8 {
        UInt8(truncatingIfNeeded: v) & 0x7F
    }
}
