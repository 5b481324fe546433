@testable import SpinetMIDI

/// Hand-made file pieces. Offsets in the tests are spelled out against this
/// layout: the header is bytes 0...13, the first chunk's tag is at 14, its
/// length at 18 and its data starts at 22.
enum SMF {
    static func be32(_ v: Int) -> [UInt8] { [UInt8((v >> 24) & 0xFF), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }
    static func le32(_ v: Int) -> [UInt8] { be32(v).reversed() }
    static func be16(_ v: Int) -> [UInt8] { [UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }

    static func header(format: Int = 0, tracks: Int = 1, division: Int = 480) -> [UInt8] {
        Array("MThd".utf8) + be32(6) + be16(format) + be16(tracks) + be16(division)
    }
    static func chunk(_ tag: String, _ body: [UInt8]) -> [UInt8] {
        Array(tag.utf8) + be32(body.count) + body
    }
    static func track(_ body: [UInt8]) -> [UInt8] { chunk("MTrk", body) }
    static let endOfTrack: [UInt8] = [0x00, 0xFF, 0x2F, 0x00]

    /// A format 0 file with one track whose data is `body`.
    static func file(_ body: [UInt8], division: Int = 480) -> [UInt8] {
        header(format: 0, tracks: 1, division: division) + track(body)
    }
}

/// The error a parse throws, or nil if it succeeds.
func parseError(_ bytes: [UInt8]) -> MIDIFileError? {
    do {
        _ = try MIDIFile(bytes: bytes)
        return nil
    } catch {
        return error
    }
}

func ev(_ tick: Int64, _ kind: TrackEvent.Kind) -> TrackEvent { TrackEvent(tick: tick, kind: kind) }
func on(_ ch: UInt8, _ key: UInt8, _ vel: UInt8) -> TrackEvent.Kind { .message(.noteOn(channel: ch, key: key, velocity: vel)) }
func off(_ ch: UInt8, _ key: UInt8, _ vel: UInt8 = 64) -> TrackEvent.Kind { .message(.noteOff(channel: ch, key: key, velocity: vel)) }
