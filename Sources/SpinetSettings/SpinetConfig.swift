import FoundationEssentials
import Glibc
import SpinetSupport

/// Settings read from a JSON file, for options a user sets once.
///
/// Looked up at `--config PATH`, else `$XDG_CONFIG_HOME/spinet/config.json`
/// (`~/.config/spinet/config.json`). Command-line options win over it.
///
/// ```json
/// {
///   "soundfonts": ["/usr/share/sounds/sf2/FluidR3_GM.sf2"],
///   "channels": ["4=synth:bell", "10=soundfont"],
///   "presets": "~/synth-presets.json",
///   "rate": 48000,
///   "mute": ["10"],
///   "solo": [],
///   "effects": "spinet",
///   "reverb": "hall",
///   "chorus": "subtle",
///   "delay": "none",
///   "highpass": "30",
///   "low-shelf": "+2@120",
///   "high-shelf": "-3@8000"
/// }
/// ```
/// The effect keys take what the options of the same name take.
/// Every key is optional; an unknown key is an error, so a typo does not pass silently.
public struct SpinetConfig: Equatable, Sendable {
    public var soundFonts: [String] = []
    public var channels: [String] = []
    public var presets: String?
    public var rate: Int?
    /// Channel specs to mute and to solo (as `--mute` and `--solo` take them).
    public var mute: [String] = []
    public var solo: [String] = []
    /// Effects and master EQ, as the options of the same name take them.
    public var effects: String?
    public var reverb: String?
    public var chorus: String?
    public var delay: String?
    public var highPass: String?
    public var lowShelf: String?
    public var highShelf: String?
    public var path: String?

    public init() {}

    /// How an error names a setting of this file: `config PATH: "rate":`.
    public func label(_ key: String) -> String {
        "config \(path ?? ""): \"\(key)\":"
    }

    public struct ConfigError: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    static let keys: Set<String> = ["soundfonts", "channels", "presets", "rate", "mute", "solo",
                                    "effects", "reverb", "chorus", "delay", "highpass", "low-shelf", "high-shelf"]

    /// The default location, whether or not a file is there.
    public static func defaultPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        let base = environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? ((environment["HOME"] ?? expandingTilde("~")) + "/.config")
        return base + "/spinet/config.json"
    }

    /// Reads `explicitPath` (which must exist) or the default file (if present).
    public static func load(explicitPath: String?, environment: [String: String] = ProcessInfo.processInfo.environment) throws(ConfigError) -> SpinetConfig {
        let path = explicitPath ?? defaultPath(environment: environment)
        guard FileManager.default.fileExists(atPath: path) else {
            if explicitPath != nil { throw ConfigError(description: "config \(path): no such file") }
            return SpinetConfig()
        }
        let bytes: [UInt8]
        do { bytes = try SettingsText.readFile(path, what: "config \(path)", hint: "a config file is a JSON file") } catch {
            throw ConfigError(description: error.description)
        }
        return try parse(Data(bytes), path: path)
    }

    public static func parse(_ data: Data, path: String) throws(ConfigError) -> SpinetConfig {
        if let problem = SettingsText.sizeProblem(byteCount: data.count) {
            throw ConfigError(description: "config \(path): \(problem)")
        }
        let root: JSONValue
        do { root = try JSONParser.parse(String(decoding: data, as: UTF8.self)) } catch {
            throw ConfigError(description: "config \(path): not valid JSON: \(error.description)")
        }
        guard case .object(let members) = root else {
            throw ConfigError(description: "config \(path): the top level must be an object")
        }
        let dict = Dictionary(members, uniquingKeysWith: { first, _ in first })   // the parser refuses duplicates
        var config = SpinetConfig()
        config.path = path
        for key in dict.keys.sorted() where !keys.contains(key) {
            throw ConfigError(description: "config \(path): unknown key \"\(key)\" (known: \(keys.sorted().joined(separator: ", ")))")
        }
        func strings(_ key: String) throws(ConfigError) -> [String] {
            guard let v = dict[key] else { return [] }
            guard case .array(let items) = v else { throw ConfigError(description: "config \(path): \"\(key)\" must be a list of strings") }
            var list: [String] = []
            for item in items {
                guard case .string(let s) = item else { throw ConfigError(description: "config \(path): \"\(key)\" must be a list of strings") }
                list.append(expandingTilde(s))
            }
            return list
        }
        config.soundFonts = try strings("soundfonts")
        config.channels = try strings("channels").map { $0 }
        config.mute = try strings("mute")
        config.solo = try strings("solo")
        if let p = dict["presets"] {
            guard case .string(let s) = p else { throw ConfigError(description: "config \(path): \"presets\" must be a string (a path)") }
            config.presets = expandingTilde(s)
        }
        // a string, or a number where one is natural ("highpass": 30)
        func setting(_ key: String) throws(ConfigError) -> String? {
            switch dict[key] {
            case nil: return nil
            case .string(let s): return s
            case .number(let n): return formatNumber(n)
            default: throw ConfigError(description: "config \(path): \"\(key)\" must be a string")
            }
        }
        config.effects = try setting("effects")
        config.reverb = try setting("reverb")
        config.chorus = try setting("chorus")
        config.delay = try setting("delay")
        config.highPass = try setting("highpass")
        config.lowShelf = try setting("low-shelf")
        config.highShelf = try setting("high-shelf")
        if let r = dict["rate"] {
            guard let n = r.integer(in: -1_000_000_000...1_000_000_000) else {
                throw ConfigError(description: "config \(path): \"rate\" must be a whole number of Hz (got \(r.shortDescription))")
            }
            config.rate = n
        }
        return config
    }
}
