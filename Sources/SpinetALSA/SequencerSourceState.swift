import SpinetMIDI

// The MIDI-level bookkeeping (SpinetMIDI) keyed by sequencer addresses, and
// what a sequencer client adds: a client that leaves takes all its ports.

typealias HeldNotes = SpinetMIDI.HeldNoteTracker<SequencerAddress>
typealias SysExAssembler = SpinetMIDI.SysExReassembler<SequencerAddress>

extension SpinetMIDI.HeldNoteTracker where Source == SequencerAddress {
    /// Releases everything held by every port of `client`.
    @discardableResult
    mutating func release(client: UInt8, _ emit: (MIDIMessage) -> Void) -> Int {
        release(where: { $0.client == client }, emit)
    }
}

extension SpinetMIDI.SysExReassembler where Source == SequencerAddress {
    /// Forgets every partial message of a client.
    mutating func forget(client: UInt8) {
        forget(where: { $0.client == client })
    }
}
