import Glibc

/// `--channel` on the command line: which instrument a MIDI channel plays.
///
/// Forms: `N=synth`, `N=synth:PRESET`, `N=soundfont`, where N is 1-16 on
/// the first port, `P.N` (port P from 1, channel N 1-16, e.g. `2.10`) on
/// further ports, or `all`.
public struct ChannelAssignment: Equatable, Sendable {
    public enum Instrument: Equatable, Sendable {
        case soundFont
        case synth(preset: String?)
    }
    /// Global channels (port * 16 + channel, from 0).
    public var channels: [Int]
    public var instrument: Instrument

    public struct ParseError: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    public init(channels: [Int], instrument: Instrument) {
        self.channels = channels
        self.instrument = instrument
    }

    /// Parses one `--channel` value; `ports` bounds the channel numbers.
    public init(parsing text: String, ports: Int = 16, option: String = "--channel") throws(ParseError) {
        let usage = "use N=synth[:PRESET] or N=soundfont, with N from 1 to 16 (or PORT.N for further ports, or all)"
        let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
        guard parts.count == 2 else { throw ParseError(description: "\(option) \(text): \(usage)") }
        let target = parts[0].trimmingSpaces
        do throws(ParseError) {
            channels = try Self.channels(target, ports: ports)
        } catch {
            throw ParseError(description: "\(option) \(text): \(error.description); \(usage)")
        }
        let value = parts[1].trimmingSpaces
        let kind = value.split(separator: ":", maxSplits: 1).map(String.init)
        switch kind.first?.lowercased() {
        case "soundfont", "sf", "sf2":
            guard kind.count == 1 else { throw ParseError(description: "\(option) \(text): the SoundFont player takes no preset here; use program changes") }
            instrument = .soundFont
        case "synth":
            instrument = .synth(preset: kind.count == 2 && !kind[1].isEmpty ? kind[1] : nil)
        default:
            throw ParseError(description: "\(option) \(text): unknown instrument \"\(kind.first ?? "")\"; \(usage)")
        }
    }

    /// The global channels one channel spec names: `N` (1-16, first port),
    /// `P.N` (port P from 1), or `all` (every channel on `ports` ports).
    public static func channels(_ spec: String, ports: Int) throws(ParseError) -> [Int] {
        let target = spec.trimmingSpaces
        if target.lowercased() == "all" { return Array(0..<(ports * 16)) }
        let numbers = target.split(separator: ".", omittingEmptySubsequences: false).map { Int($0) }
        let port: Int, channel: Int
        switch numbers.count {
        case 1:
            guard let c = numbers[0] else { throw ParseError(description: "\"\(target)\" is not a channel") }
            port = 1; channel = c
        case 2:
            guard let p = numbers[0], let c = numbers[1] else { throw ParseError(description: "\"\(target)\" is not a channel") }
            port = p; channel = c
        default:
            throw ParseError(description: "\"\(target)\" is not a channel")
        }
        guard (1...16).contains(channel), (1...ports).contains(port) else {
            throw ParseError(description: "channel \(channel) on port \(port) does not exist")
        }
        return [(port - 1) * 16 + channel - 1]
    }

    /// The global channels of a `--mute`/`--solo` value: channel specs
    /// (see `channels(_:ports:)`) separated by commas, e.g. `10` or `1,2,2.10`.
    public static func channelList(_ text: String, ports: Int = 16, option: String) throws(ParseError) -> [Int] {
        var result: [Int] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            do {
                result += try channels(String(part), ports: ports)
            } catch {
                throw ParseError(description: "\(option) \(text): \(error.description); use channel numbers 1-16 (or PORT.N, or all), separated by commas")
            }
        }
        return result
    }
}
