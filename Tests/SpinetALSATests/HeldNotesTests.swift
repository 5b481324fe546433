import SpinetMIDI
import Testing
@testable import SpinetALSA

/// The bookkeeping behind "a source that goes away leaves no stuck notes".
@Suite("HeldNotes")
struct HeldNotesTests {
    let keyboard = SequencerAddress(client: 20, port: 0)
    let daw = SequencerAddress(client: 129, port: 0)

    private func release(_ h: inout HeldNotes, _ s: SequencerAddress, channels: Range<Int>? = nil) -> [MIDIMessage] {
        var out: [MIDIMessage] = []
        h.release(s, channels: channels) { out.append($0) }
        return out
    }

    @Test func releasesExactlyTheNotesStillHeld() {
        var h = HeldNotes(channels: 16)
        h.observe(.noteOn(channel: 0, key: 60, velocity: 100), from: keyboard)
        h.observe(.noteOn(channel: 0, key: 64, velocity: 100), from: keyboard)
        h.observe(.noteOn(channel: 9, key: 127, velocity: 100), from: keyboard)
        h.observe(.noteOff(channel: 0, key: 64, velocity: 0), from: keyboard)
        #expect(h.heldCount(keyboard) == 2)
        #expect(release(&h, keyboard) == [.noteOff(channel: 0, key: 60, velocity: 0), .noteOff(channel: 9, key: 127, velocity: 0)])
        #expect(h.heldCount(keyboard) == 0)
        #expect(release(&h, keyboard) == [])
    }

    @Test func noteOnWithVelocityZeroReleases() {
        var h = HeldNotes(channels: 16)
        h.observe(.noteOn(channel: 2, key: 40, velocity: 90), from: keyboard)
        h.observe(.noteOn(channel: 2, key: 40, velocity: 0), from: keyboard)
        #expect(release(&h, keyboard) == [])
    }

    @Test func pedalsAreLiftedAfterTheNotes() {
        var h = HeldNotes(channels: 16)
        h.observe(.controlChange(channel: 1, controller: MIDIController.sustain, value: 127), from: keyboard)
        h.observe(.noteOn(channel: 1, key: 50, velocity: 90), from: keyboard)
        h.observe(.controlChange(channel: 1, controller: MIDIController.sostenuto, value: 100), from: keyboard)
        #expect(release(&h, keyboard) == [
            .noteOff(channel: 1, key: 50, velocity: 0),
            .controlChange(channel: 1, controller: MIDIController.sustain, value: 0),
            .controlChange(channel: 1, controller: MIDIController.sostenuto, value: 0),
        ])
        // Pedal down then up: nothing to lift.
        h.observe(.controlChange(channel: 1, controller: MIDIController.sustain, value: 127), from: keyboard)
        h.observe(.controlChange(channel: 1, controller: MIDIController.sustain, value: 0), from: keyboard)
        #expect(release(&h, keyboard) == [])
    }

    @Test func sourcesAreKeptApart() {
        var h = HeldNotes(channels: 32)
        h.observe(.noteOn(channel: 0, key: 60, velocity: 90), from: keyboard)
        h.observe(.noteOn(channel: 0, key: 62, velocity: 90), from: daw)
        #expect(release(&h, daw) == [.noteOff(channel: 0, key: 62, velocity: 0)])
        #expect(h.heldCount(keyboard) == 1)
    }

    @Test func releaseLimitedToOnePortsChannels() {
        var h = HeldNotes(channels: 32)
        h.observe(.noteOn(channel: 3, key: 60, velocity: 90), from: keyboard)
        h.observe(.noteOn(channel: 19, key: 61, velocity: 90), from: keyboard)
        // Unsubscribed from the second port (channels 16..<32) only.
        #expect(release(&h, keyboard, channels: 16..<32) == [.noteOff(channel: 19, key: 61, velocity: 0)])
        #expect(h.heldCount(keyboard) == 1)
    }

    @Test func releaseEveryPortOfAClient() {
        var h = HeldNotes(channels: 16)
        let second = SequencerAddress(client: 20, port: 1)
        h.observe(.noteOn(channel: 0, key: 60, velocity: 90), from: keyboard)
        h.observe(.noteOn(channel: 0, key: 72, velocity: 90), from: second)
        h.observe(.noteOn(channel: 0, key: 48, velocity: 90), from: daw)
        var out: [MIDIMessage] = []
        h.release(client: 20) { out.append($0) }
        #expect(Set(out) == [.noteOff(channel: 0, key: 60, velocity: 0), .noteOff(channel: 0, key: 72, velocity: 0)])
        #expect(h.heldCount(daw) == 1)
    }

    @Test func allNotesOffAndResetForgetWhatTheyEnd() {
        var h = HeldNotes(channels: 16)
        h.observe(.noteOn(channel: 0, key: 60, velocity: 90), from: keyboard)
        h.observe(.controlChange(channel: 0, controller: MIDIController.sustain, value: 127), from: keyboard)
        h.observe(.controlChange(channel: 0, controller: MIDIController.allNotesOff, value: 0), from: keyboard)
        #expect(h.heldCount(keyboard) == 1)   // the pedal is still down
        h.observe(.systemReset, from: keyboard)
        #expect(h.heldCount(keyboard) == 0)
    }

    @Test func fullTableReusesIdleSourcesAndCountsTheRest() {
        var h = HeldNotes(channels: 16, sources: 2)
        h.observe(.noteOn(channel: 0, key: 60, velocity: 90), from: SequencerAddress(client: 20, port: 0))
        h.observe(.noteOn(channel: 0, key: 61, velocity: 90), from: SequencerAddress(client: 21, port: 0))
        h.observe(.noteOn(channel: 0, key: 62, velocity: 90), from: SequencerAddress(client: 22, port: 0))
        #expect(h.untracked == 1)
        h.observe(.noteOff(channel: 0, key: 61, velocity: 0), from: SequencerAddress(client: 21, port: 0))
        h.observe(.noteOn(channel: 0, key: 63, velocity: 90), from: SequencerAddress(client: 23, port: 0))
        #expect(h.heldCount(SequencerAddress(client: 23, port: 0)) == 1)
        #expect(h.untracked == 1)
    }
}
