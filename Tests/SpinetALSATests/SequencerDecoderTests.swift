import CALSA
import SpinetMIDI
import Testing
@testable import SpinetALSA

/// ALSA sequencer events, built as the kernel delivers them, decoded into
/// Spinet's messages. No sound card needed: the events are plain structs.
@Suite("SequencerDecoder")
struct SequencerDecoderTests {
    private func event(_ type: snd_seq_event_type) -> snd_seq_event_t {
        var ev = snd_seq_event_t()
        ev.type = snd_seq_event_type_t(type.rawValue)
        ev.source = snd_seq_addr_t(client: 20, port: 0)
        ev.dest = snd_seq_addr_t(client: 128, port: 0)
        return ev
    }

    private func note(_ type: snd_seq_event_type, channel: UInt8, key: UInt8, velocity: UInt8) -> snd_seq_event_t {
        var ev = event(type)
        ev.data.note.channel = channel
        ev.data.note.note = key
        ev.data.note.velocity = velocity
        return ev
    }

    private func control(_ type: snd_seq_event_type, channel: UInt8, param: UInt32 = 0, value: Int32) -> snd_seq_event_t {
        var ev = event(type)
        ev.data.control.channel = channel
        ev.data.control.param = param
        ev.data.control.value = value
        return ev
    }

    private func messages(_ input: SequencerInput) -> [MIDIMessage] {
        if case .messages(let b) = input { return b.messages }
        Issue.record("expected messages, got \(input)")
        return []
    }

    @Test func notesAndKeyPressure() {
        #expect(messages(SequencerDecoder.decode(note(SND_SEQ_EVENT_NOTEON, channel: 3, key: 60, velocity: 100), port: 0)) == [.noteOn(channel: 3, key: 60, velocity: 100)])
        // Velocity 0 still arrives as NOTEON; the engine's units treat it as a note-off.
        #expect(messages(SequencerDecoder.decode(note(SND_SEQ_EVENT_NOTEON, channel: 3, key: 60, velocity: 0), port: 0)) == [.noteOn(channel: 3, key: 60, velocity: 0)])
        #expect(messages(SequencerDecoder.decode(note(SND_SEQ_EVENT_NOTEOFF, channel: 15, key: 127, velocity: 64), port: 0)) == [.noteOff(channel: 15, key: 127, velocity: 64)])
        #expect(messages(SequencerDecoder.decode(note(SND_SEQ_EVENT_KEYPRESS, channel: 0, key: 61, velocity: 33), port: 0)) == [.polyPressure(channel: 0, key: 61, pressure: 33)])
    }

    @Test func dataBytesAreMaskedToSevenBits() {
        #expect(messages(SequencerDecoder.decode(note(SND_SEQ_EVENT_NOTEON, channel: 0x13, key: 0xBC, velocity: 0xFF), port: 0)) == [.noteOn(channel: 3, key: 0x3C, velocity: 0x7F)])
    }

    @Test func secondPortAddressesChannels17To32() {
        #expect(messages(SequencerDecoder.decode(note(SND_SEQ_EVENT_NOTEON, channel: 9, key: 36, velocity: 90), port: 1)) == [.noteOn(channel: 25, key: 36, velocity: 90)])
    }

    @Test func channelMessages() {
        #expect(messages(SequencerDecoder.decode(control(SND_SEQ_EVENT_CONTROLLER, channel: 1, param: 7, value: 100), port: 0)) == [.controlChange(channel: 1, controller: 7, value: 100)])
        #expect(SequencerDecoder.decode(control(SND_SEQ_EVENT_CONTROLLER, channel: 1, param: 300, value: 1), port: 0) == .ignored)
        #expect(messages(SequencerDecoder.decode(control(SND_SEQ_EVENT_PGMCHANGE, channel: 2, value: 19), port: 0)) == [.programChange(channel: 2, program: 19)])
        #expect(messages(SequencerDecoder.decode(control(SND_SEQ_EVENT_CHANPRESS, channel: 2, value: 77), port: 0)) == [.channelPressure(channel: 2, pressure: 77)])
    }

    @Test func pitchBendIsSignedInALSAAndUnsignedInSpinet() {
        let cases: [(Int32, UInt16)] = [(-8192, 0), (0, 8192), (8191, 16383), (-9000, 0), (9000, 16383)]
        for (alsa, spinet) in cases {
            #expect(messages(SequencerDecoder.decode(control(SND_SEQ_EVENT_PITCHBEND, channel: 4, value: alsa), port: 0)) == [.pitchBend(channel: 4, value: spinet)], "ALSA \(alsa)")
        }
    }

    @Test func fourteenBitControllerBecomesMSBAndLSB() {
        // Modulation (1) = 0x2345: MSB 0x46 on CC 1, LSB 0x45 on CC 33.
        #expect(messages(SequencerDecoder.decode(control(SND_SEQ_EVENT_CONTROL14, channel: 0, param: 1, value: 0x2345), port: 0)) == [.controlChange(channel: 0, controller: 1, value: 0x46),
                        .controlChange(channel: 0, controller: 33, value: 0x45)])
        // Controllers 32 and above have no LSB partner: one 7-bit message.
        #expect(messages(SequencerDecoder.decode(control(SND_SEQ_EVENT_CONTROL14, channel: 0, param: 64, value: 127), port: 0)) == [.controlChange(channel: 0, controller: 64, value: 127)])
    }

    @Test func rpnAndNRPNBecomeFourControllers() {
        // RPN 0 (pitch-bend range) = 12 semitones: 101 0, 100 0, 6 12, 38 0.
        #expect(messages(SequencerDecoder.decode(control(SND_SEQ_EVENT_REGPARAM, channel: 5, param: 0, value: 12 << 7), port: 0)) == [.controlChange(channel: 5, controller: 101, value: 0),
                        .controlChange(channel: 5, controller: 100, value: 0),
                        .controlChange(channel: 5, controller: 6, value: 12),
                        .controlChange(channel: 5, controller: 38, value: 0)])
        #expect(messages(SequencerDecoder.decode(control(SND_SEQ_EVENT_NONREGPARAM, channel: 5, param: 0x0181, value: 0x0203), port: 0)) == [.controlChange(channel: 5, controller: 99, value: 3),
                        .controlChange(channel: 5, controller: 98, value: 1),
                        .controlChange(channel: 5, controller: 6, value: 4),
                        .controlChange(channel: 5, controller: 38, value: 3)])
    }

    @Test func noteWithDuration() {
        var ev = note(SND_SEQ_EVENT_NOTE, channel: 1, key: 64, velocity: 80)
        ev.data.note.off_velocity = 40
        ev.data.note.duration = 250
        #expect(SequencerDecoder.decode(ev, port: 0) == .timedNote(on: .noteOn(channel: 1, key: 64, velocity: 80), off: .noteOff(channel: 1, key: 64, velocity: 40), milliseconds: 250))
    }

    @Test func resetSysExAndIgnoredEvents() {
        #expect(messages(SequencerDecoder.decode(event(SND_SEQ_EVENT_RESET), port: 0)) == [.systemReset])
        let bytes: [UInt8] = [0xF0, 0x7E, 0x7F, 0x09, 0x01, 0xF7]
        var ev = snd_seq_event_t()
        bytes.withUnsafeBufferPointer { b in
            spinet_seq_ev_set_sysex(&ev, UInt32(b.count), b.baseAddress)
            #expect(SequencerDecoder.decode(ev, port: 0) == .sysEx)
            #expect(spinet_seq_ev_ext_len(&ev) == 6)
            #expect(spinet_seq_ev_ext_ptr(&ev)?[3] == 0x09)
        }
        #expect(SequencerDecoder.decode(event(SND_SEQ_EVENT_CLOCK), port: 0) == .clock)
        for t in [SND_SEQ_EVENT_START, SND_SEQ_EVENT_CONTINUE, SND_SEQ_EVENT_STOP] {
            #expect(SequencerDecoder.decode(event(t), port: 0) == .transport)
        }
        for t in [SND_SEQ_EVENT_SENSING, SND_SEQ_EVENT_SONGPOS] {
            #expect(SequencerDecoder.decode(event(t), port: 0) == .ignored)
        }
    }

    @Test func subscriptionAndAnnouncements() {
        var ev = event(SND_SEQ_EVENT_PORT_UNSUBSCRIBED)
        ev.data.connect.sender = snd_seq_addr_t(client: 20, port: 0)
        ev.data.connect.dest = snd_seq_addr_t(client: 128, port: 1)
        #expect(SequencerDecoder.decode(ev, port: 0) == .unsubscribed(sender: SequencerAddress(client: 20, port: 0), dest: SequencerAddress(client: 128, port: 1)))
        ev.type = snd_seq_event_type_t(SND_SEQ_EVENT_PORT_SUBSCRIBED.rawValue)
        #expect(SequencerDecoder.decode(ev, port: 0) == .subscribed(sender: SequencerAddress(client: 20, port: 0), dest: SequencerAddress(client: 128, port: 1)))
        var a = event(SND_SEQ_EVENT_PORT_START)
        a.data.addr = snd_seq_addr_t(client: 24, port: 2)
        #expect(SequencerDecoder.decode(a, port: 0) == .portStarted(SequencerAddress(client: 24, port: 2)))
        a.type = snd_seq_event_type_t(SND_SEQ_EVENT_PORT_EXIT.rawValue)
        #expect(SequencerDecoder.decode(a, port: 0) == .portExited(SequencerAddress(client: 24, port: 2)))
        a.type = snd_seq_event_type_t(SND_SEQ_EVENT_CLIENT_EXIT.rawValue)
        #expect(SequencerDecoder.decode(a, port: 0) == .clientExited(24))
    }

    @Test func realTimeStampHelpers() {
        var ev = event(SND_SEQ_EVENT_NOTEON)
        #expect(spinet_seq_ev_is_real_time(&ev) == 0)
        spinet_seq_ev_set_real_time(&ev, 3, 12, 500)
        #expect(spinet_seq_ev_is_real_time(&ev) == 1)
        #expect(ev.queue == 3)
        #expect(ev.time.time.tv_sec == 12)
        #expect(ev.time.time.tv_nsec == 500)
    }
}
