import FoundationEssentials
import SpinetEffects
import SpinetEngine
import SpinetRig
import SpinetSettings
import SpinetSoundFont
import SpinetSupport
import SpinetSynth

/// The automatable parameters: ids, ranges and defaults (the C API's
/// `spinet_param_info`, the LV2 control ports, the CLAP params).
public enum PluginParameter: Int, CaseIterable, Sendable {
    case gain = 0, reverb, chorus, delay, ceiling

    public var symbol: String {
        switch self {
        case .gain: "gain"
        case .reverb: "reverb"
        case .chorus: "chorus"
        case .delay: "delay"
        case .ceiling: "ceiling"
        }
    }

    public var name: String {
        switch self {
        case .gain: "Master gain"
        case .reverb: "Reverb return"
        case .chorus: "Chorus return"
        case .delay: "Delay return"
        case .ceiling: "Limiter ceiling"
        }
    }

    public var unit: String {
        switch self {
        case .gain: "dB"
        case .ceiling: "dBFS"
        default: ""
        }
    }

    public var range: ClosedRange<Double> {
        switch self {
        case .gain: -60...12
        case .reverb, .chorus, .delay: 0...1
        case .ceiling: -24...0
        }
    }

    public var defaultValue: Double {
        switch self {
        case .gain: 0
        case .reverb, .chorus, .delay: 1
        case .ceiling: -1
        }
    }

    /// `value` within the range (NaN: the default).
    public func clamp(_ value: Double) -> Double {
        guard !value.isNaN else { return defaultValue }
        return min(max(value, range.lowerBound), range.upperBound)
    }
}

/// Everything a plugin instance is set to, what its host saves with the
/// project: the SoundFont, the channels given to Spinet's synth, the synth's
/// presets, the effects and the parameters. One JSON object (`json()`,
/// `init(json:)`), whose keys follow Spinet's config file.
///
/// A new instance starts from the user's Spinet config file
/// (`~/.config/spinet/config.json`: "soundfonts", "channels", "presets",
/// "effects", "reverb", "chorus", "delay"), so that the plugin sounds as
/// `spinet play` does; the saved state wins over it from then on.
public struct PluginSettings: Equatable, Sendable {
    public static let stateVersion = 1

    public var soundFont: String
    /// `--channel` values: `N=synth[:PRESET]`, `N=soundfont`.
    public var channels: [String] = []
    /// The synth's presets (the factory bank unless a preset file was given).
    public var presets: PresetBank = .factory
    /// "spinet" (Spinet's reverb, chorus and delay on CC 91/93/94) or
    /// "fluidsynth" (FluidSynth's own reverb and chorus).
    public var effects = "spinet"
    /// Spinet's effect presets by name, or "none".
    public var reverb = "room"
    public var chorus = "subtle"
    public var delay = "eighth"
    /// The parameters, by `PluginParameter.rawValue`.
    public var parameters: [Double] = PluginParameter.allCases.map(\.defaultValue)

    /// Set by `init(json:)` when the state's SoundFont is nowhere it was
    /// looked for: the paths tried, the saved one among them. Not saved.
    public var missingSoundFont: [String]?

    public init(soundFont: String) {
        self.soundFont = soundFont
    }

    /// The settings compared: where a missing font was looked for is a note
    /// about one restore, not a setting (it is not saved), so it takes no part.
    public static func == (a: PluginSettings, b: PluginSettings) -> Bool {
        a.soundFont == b.soundFont && a.channels == b.channels && a.presets == b.presets && a.effects == b.effects
            && a.reverb == b.reverb && a.chorus == b.chorus && a.delay == b.delay && a.parameters == b.parameters
    }

    /// Where a restored state's SoundFont may be, in order: the path the
    /// host gives (LV2 maps it to the project's copy or link), the absolute
    /// path the state holds, and, for a relative saved path, that path
    /// under the host's path's directory and under the plugin's bundle; a
    /// file of the saved name in the bundle's SoundFonts directory (the
    /// bundled font of another install). Without duplicates.
    public static func soundFontCandidates(override: String?, saved: String?, bundleDirectory: String?) -> [String] {
        var list: [String] = []
        if let o = override, !o.isEmpty { list.append(o) }
        if let s = saved, !s.isEmpty {
            if s.hasPrefix("/") {
                list.append(s)
            } else {
                if let o = override, let slash = o.lastIndex(of: "/") { list.append(String(o[..<slash]) + "/" + s) }
                if let b = bundleDirectory, !b.isEmpty { list.append(b + "/" + s) }
            }
            if let b = bundleDirectory, !b.isEmpty, let name = s.split(separator: "/").last {
                list.append(b + "/SoundFonts/" + name)
            }
        }
        var seen = Set<String>()
        return list.filter { seen.insert($0).inserted }
    }

    /// Problems found while reading a state or a config file: one line for
    /// the host's log (a control character echoed from a state escaped, an
    /// echoed value of thousands of bytes clipped).
    public struct Problem: Error, CustomStringConvertible, Sendable {
        public var description: String
        init(_ d: String) { description = clippingEchoes(escapingControlCharacters(d)) }
    }

    /// The defaults a new instance gets: the config file's settings (if
    /// there is one and it reads; else `warning` says why), the font from
    /// there or the one `spinet` finds (`bundleDirectory` first).
    public static func defaults(bundleDirectory: String?, environment: [String: String] = ProcessInfo.processInfo.environment,
                                warning: (String) -> Void) -> PluginSettings? {
        var config = SpinetConfig()
        do { config = try SpinetConfig.load(explicitPath: nil, environment: environment) } catch { warning("\(error.description); the plugin starts from its defaults") }
        // beside the plugin: the search `spinet` makes from its executable
        // (SoundFonts/, an installed prefix's share/spinet), from the bundle
        var candidates: [String] = []
        if let dir = bundleDirectory, !dir.isEmpty {
            candidates = SoundFontLocator.candidates(environment: [:], executable: dir + "/plugin")
                .filter { $0 != SoundFontLocator.systemDefault }
        }
        // a font the config file names but that cannot be opened is said, naming the file and the key
        let configFonts = config.soundFonts.filter { font in
            guard let problem = config.fontProblem(font) else { return true }
            warning(problem + "; the plugin looks for another SoundFont")
            return false
        }
        candidates = configFonts + candidates + SoundFontLocator.candidates()
        guard let font = candidates.first(where: SoundFontLocator.isReadableFontFile) else { return nil }
        var s = PluginSettings(soundFont: font)
        s.channels = config.channels
        if let path = config.presets {
            do { s.presets = try PresetBank(jsonFile: expandingTilde(path)) } catch { warning("\(config.label("presets")) \(error.description); the factory presets are used") }
        }
        if let e = config.effects?.lowercased() { s.effects = e }
        if let r = config.reverb { s.reverb = r }
        if let c = config.chorus { s.chorus = c }
        if let d = config.delay { s.delay = d }
        do { _ = try s.graphSettings() } catch {
            warning("\(error.description); the plugin starts from its defaults")
            return PluginSettings(soundFont: font)
        }
        return s
    }

    /// The graph these settings build (checked: an unknown preset name, a
    /// bad channel assignment is an error naming it).
    public func graphSettings() throws(Problem) -> GraphSettings {
        var sound = SoundChoices()
        let kind = effects.lowercased()
        guard kind == "spinet" || kind == "fluidsynth" else { throw Problem("\"effects\": \(effects) is not known; use spinet or fluidsynth") }
        if kind == "spinet" {
            sound.effects.reverb = try Self.preset(reverb, key: "reverb", ReverbPreset.init(name:), ReverbPreset.all.map(\.name))
            sound.effects.chorus = try Self.preset(chorus, key: "chorus", ChorusPreset.init(name:), ChorusPreset.all.map(\.name))
            sound.effects.delay = try Self.preset(delay, key: "delay", DelayPreset.init(name:), DelayPreset.all.map(\.name) + ["a time such as 350ms or 1/4"])
        }
        sound.effects.fluidEffects = kind == "fluidsynth"
        sound.presets = presets
        sound.channelAssignments = channels
        sound.gainDB = parameters[PluginParameter.gain.rawValue]
        sound.ceilingDBFS = parameters[PluginParameter.ceiling.rawValue]
        let g = GraphSettings(sound)
        // the assignments and preset names are checked by building the synth
        do { _ = try GraphBuilder.synth(g, ports: 1) } catch { throw Problem(error.description) }
        return g
    }

    private static func preset<P>(_ name: String, key: String, _ named: (String) -> P?, _ choices: [String]) throws(Problem) -> P? {
        if name.lowercased() == "none" { return nil }
        guard let p = named(name) else {
            throw Problem("\"\(key)\": \(name) is not known; use \((choices + ["none"]).joined(separator: ", "))")
        }
        return p
    }

    // MARK: state

    public func json() -> String {
        var fields: [String] = [
            "\"spinet-plugin-state\": \(Self.stateVersion)",
            "\"soundfont\": \(jsonQuoted(soundFont))",
            "\"channels\": [\(channels.map(jsonQuoted).joined(separator: ", "))]",
            "\"effects\": \(jsonQuoted(effects))",
            "\"reverb\": \(jsonQuoted(reverb))",
            "\"chorus\": \(jsonQuoted(chorus))",
            "\"delay\": \(jsonQuoted(delay))",
        ]
        let params = PluginParameter.allCases.map { "\(jsonQuoted($0.symbol)): \(formatNumber(parameters[$0.rawValue]))" }
        fields.append("\"parameters\": {\(params.joined(separator: ", "))}")
        if presets != .factory {
            fields.append("\"presets\": \(jsonQuoted(presets.jsonString()))")
        }
        return "{\n  " + fields.joined(separator: ",\n  ") + "\n}\n"
    }

    /// Reads a state `json()` wrote. Its SoundFont is the first readable
    /// one of `soundFontCandidates` (`soundFontOverride`, the host's mapped
    /// path, first); when none is, `soundFont` is the first of them and
    /// `missingSoundFont` lists where it was looked for: every other setting
    /// still holds.
    public init(json text: String, soundFontOverride: String? = nil, bundleDirectory: String? = nil) throws(Problem) {
        if let problem = SettingsText.sizeProblem(byteCount: text.utf8.count) {
            throw Problem("the saved state is \(problem) (\(text.utf8.count) bytes)")
        }
        let root: JSONValue
        do { root = try JSONParser.parse(text) } catch { throw Problem("the saved state is not valid JSON: \(error.description)") }
        guard case .object(let members) = root else { throw Problem("the saved state is not a JSON object") }
        let dict = Dictionary(members, uniquingKeysWith: { a, _ in a })
        guard let versionValue = dict["spinet-plugin-state"] else { throw Problem("the saved state is not Spinet's (no \"spinet-plugin-state\")") }
        // Every number that must be whole is read through `integer(in:)`: 1e300, -1 or 1.5 is refused, never converted.
        guard let version = versionValue.integer(in: 1...Int(Int32.max)) else {
            throw Problem("the saved state's \"spinet-plugin-state\" is not a version number (a whole number from 1; got \(versionValue.shortDescription))")
        }
        guard version <= Self.stateVersion else {
            throw Problem("the saved state is version \(version), newer than this Spinet reads (\(Self.stateVersion)); update Spinet")
        }
        func string(_ key: String) throws(Problem) -> String? {
            switch dict[key] {
            case nil: return nil
            case .string(let s): return s
            default: throw Problem("the saved state's \"\(key)\" is not a string")
            }
        }
        let saved = try string("soundfont")
        let candidates = Self.soundFontCandidates(override: soundFontOverride, saved: saved, bundleDirectory: bundleDirectory)
        guard let first = candidates.first else { throw Problem("the saved state names no SoundFont") }
        if let found = candidates.first(where: SoundFontLocator.isReadableFontFile) {
            self.init(soundFont: found)
        } else {
            self.init(soundFont: first)
            missingSoundFont = candidates
        }
        if let v = dict["channels"] {
            guard case .array(let items) = v else { throw Problem("the saved state's \"channels\" is not a list") }
            channels = []
            for item in items {
                guard case .string(let s) = item else { throw Problem("the saved state's \"channels\" is not a list of strings") }
                channels.append(s)
            }
        }
        if let e = try string("effects") { effects = e }
        if let r = try string("reverb") { reverb = r }
        if let c = try string("chorus") { chorus = c }
        if let d = try string("delay") { delay = d }
        if let p = try string("presets") {
            do { presets = try PresetBank(json: p, source: "the saved state's presets") } catch { throw Problem(error.description) }
        }
        if let v = dict["parameters"] {
            guard case .object(let params) = v else { throw Problem("the saved state's \"parameters\" is not an object (got \(v.shortDescription))") }
            for (key, value) in params {
                guard let p = PluginParameter.allCases.first(where: { $0.symbol == key }) else { continue }   // a later version's
                guard case .number(let n) = value else { throw Problem("the saved state's parameter \"\(key)\" is not a number") }
                parameters[p.rawValue] = p.clamp(n)
            }
        }
        _ = try graphSettings()
    }
}
