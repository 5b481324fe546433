import ArgumentParser
import SpinetSettings
import SpinetSynth

/// The channel options `render` and `play` share: what each channel plays,
/// the synth's preset file, mute and solo. The config file may set each
/// under the same name: its channel assignments, mute and solo come first
/// and the options add to them; `--presets` replaces its preset file.
struct ChannelOptions: ParsableArguments {
    @Option(name: .customLong("channel"), help: ArgumentHelp("Which instrument a channel plays: N=synth[:PRESET] or N=soundfont (N 1-16, PORT.N, or all); repeatable. Bank Select 126 with a Program Change (in a file, from a keyboard or a DAW) also picks Spinet's synth.", valueName: "assignment"))
    var channelAssignments: [String] = []

    @Option(help: ArgumentHelp("A JSON file of synth presets (see Sources/SpinetSynth/PRESETS.md).", valueName: "path"))
    var presets: String?

    @Option(help: ArgumentHelp("Channels to silence: numbers 1-16 (or PORT.N) separated by commas; repeatable.", valueName: "channels"))
    var mute: [String] = []

    @Option(help: ArgumentHelp("Channels to hear alone (every other one is muted): numbers 1-16 (or PORT.N) separated by commas; repeatable.", valueName: "channels"))
    var solo: [String] = []

    /// The config file's channel assignments, then the options'.
    func assignments(config: SpinetConfig) -> [String] {
        config.channels + channelAssignments
    }

    /// The preset file in use: `--presets`, else the config file's (nil: the factory presets).
    func presetFile(config: SpinetConfig) -> String? {
        presets ?? config.presets
    }

    /// The presets of `presetFile(config:)` (the factory presets when none);
    /// a file that does not read is named with the config file's key when
    /// the config file named it.
    func presetBank(config: SpinetConfig) throws -> PresetBank {
        guard let path = presetFile(config: config) else { return .factory }
        do { return try PresetBank(jsonFile: path) } catch {
            throw Failure(presets == nil ? "\(config.label("presets")) " + error.description : error.description)
        }
    }

    /// The muted and the soloed global channels, the config file's first;
    /// `ports`: how many ports a PORT.N may name.
    func mutedAndSoloed(config: SpinetConfig, ports: Int = 16) throws -> (muted: [Int], solo: [Int]) {
        func channels(_ texts: [String], _ option: String) throws -> [Int] {
            var list: [Int] = []
            for text in texts { list += try orFailure { try ChannelAssignment.channelList(text, ports: ports, option: option) } }
            return list
        }
        return (try channels(config.mute, config.label("mute")) + channels(mute, "--mute"),
                try channels(config.solo, config.label("solo")) + channels(solo, "--solo"))
    }
}
