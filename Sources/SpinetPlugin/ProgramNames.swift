import SpinetSoundFont
import SpinetSynth

/// The names a host shows for an instance's programs and drum keys (LV2's
/// midnam, CLAP's note names): the SoundFont's presets by bank and program,
/// Spinet's synth presets in bank 126 (`OscillatorSynth.spinetPresetBank`,
/// where they replace any of the font's), and the keys of the drum kits.
///
/// A SoundFont names its presets, not its keys (and FluidSynth has no key
/// names to give), so the drum keys are named only for a General MIDI font,
/// with the General MIDI percussion names (keys 35-81) for every kit of
/// bank 128; a font counts as General MIDI when its bank 0 holds at least
/// 120 of the 128 programs and it has a kit in bank 128. Other fonts get
/// no key names rather than wrong ones.
public struct PluginNameTable: Equatable, Sendable {
    public struct Program: Equatable, Sendable {
        public var bank: Int
        public var program: Int
        public var name: String
    }

    public struct Key: Equatable, Sendable {
        public var bank: Int
        public var program: Int
        public var key: Int
        public var name: String
    }

    /// By bank, then program.
    public var programs: [Program] = []
    /// By bank, program, key.
    public var keys: [Key] = []

    public init(soundFont: String, presets: PresetBank) {
        let synthBank = Int(OscillatorSynth.spinetPresetBank)
        let font = SoundFontPresetNames(fonts: [soundFont]).all.filter { $0.bank != synthBank }
        let synth = presets.presets.sorted { $0.program < $1.program }
            .map { (bank: synthBank, program: $0.program, name: $0.name) }
        programs = (font + synth).sorted { ($0.bank, $0.program) < ($1.bank, $1.program) }
            .map { Program(bank: $0.bank, program: $0.program, name: $0.name) }
        let melodic = Set(font.filter { $0.bank == 0 }.map(\.program)).count
        let kits = font.filter { $0.bank == 128 }
        if melodic >= 120 && !kits.isEmpty {
            for kit in kits {
                for (i, name) in Self.generalMIDIPercussion.enumerated() {
                    keys.append(Key(bank: 128, program: kit.program, key: 35 + i, name: name))
                }
            }
        }
    }

    /// General MIDI Level 1's percussion key map, keys 35 to 81.
    public static let generalMIDIPercussion = [
        "Acoustic Bass Drum", "Bass Drum 1", "Side Stick", "Acoustic Snare", "Hand Clap", "Electric Snare",
        "Low Floor Tom", "Closed Hi-Hat", "High Floor Tom", "Pedal Hi-Hat", "Low Tom", "Open Hi-Hat",
        "Low-Mid Tom", "Hi-Mid Tom", "Crash Cymbal 1", "High Tom", "Ride Cymbal 1", "Chinese Cymbal",
        "Ride Bell", "Tambourine", "Splash Cymbal", "Cowbell", "Crash Cymbal 2", "Vibraslap",
        "Ride Cymbal 2", "Hi Bongo", "Low Bongo", "Mute Hi Conga", "Open Hi Conga", "Low Conga",
        "High Timbale", "Low Timbale", "High Agogo", "Low Agogo", "Cabasa", "Maracas",
        "Short Whistle", "Long Whistle", "Short Guiro", "Long Guiro", "Claves", "Hi Wood Block",
        "Low Wood Block", "Mute Cuica", "Open Cuica", "Mute Triangle", "Open Triangle",
    ]
}

extension PluginInstance {
    /// The names of the current settings' font and presets (control side).
    public func nameTable() -> PluginNameTable {
        let (font, presets) = currentFontAndPresets()
        return PluginNameTable(soundFont: font, presets: presets)
    }
}
