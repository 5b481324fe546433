import SpinetMIDI

/// One complete MIDI message as a host hands it over at a frame offset
/// (JACK MIDI, LV2 atoms, CLAP's MIDI events through the plugin core): whole
/// messages, no running status. The one place where such bytes become what
/// the engine renders, so every host reads them by the same rule:
/// - F0 ... F7: a SysEx event (the bytes are lent, not copied);
/// - a channel voice message, its data bytes masked to 7 bits (a missing data
///   byte reads as 0), or System Reset (FF): a message event, on `port`'s
///   block of 16 channels;
/// - Timing Clock (F8) and Start, Continue, Stop (FA, FB, FC): the host's
///   clock, for a MIDI-clock tempo (`MIDIClockTempo`);
/// - anything else (other system common and real-time bytes, a data byte
///   where a status byte should be): nothing to play.
public enum RawMIDIEvent {
    case event(CallbackEvent)
    case clockTick
    /// Start, Continue or Stop: the next clock ticks begin a new beat.
    case clockRestart
    case ignored

    /// Render-thread safe: allocates nothing.
    @inlinable
    public init(_ bytes: UnsafePointer<UInt8>, count: Int, offset: Int, port: UInt8 = 0) {
        guard count > 0 else { self = .ignored; return }
        let status = bytes[0]
        switch status {
        case 0xF0:
            self = .event(CallbackEvent(offset: offset, sysEx: UnsafeBufferPointer(start: bytes, count: count)))
        case 0xF8:
            self = .clockTick
        case 0xFA, 0xFB, 0xFC:
            self = .clockRestart
        default:
            guard status >= 0x80,
                  let m = MIDIMessage(status: status, data1: count > 1 ? bytes[1] : 0, data2: count > 2 ? bytes[2] : 0, port: port)
            else { self = .ignored; return }
            self = .event(CallbackEvent(offset: offset, m))
        }
    }
}
