import FoundationEssentials
import Glibc
import SpinetSupport

/// The presets an `OscillatorSynth` can play, chosen by program change or by
/// name. Names and program numbers are unique within a bank.
///
/// Users edit presets in a JSON file (schema in `PRESETS.md` next to this
/// file):
///
/// ```json
/// { "base": "factory",
///   "presets": [ { "name": "lead", "from": "saw-lead", "program": 20, "cutoff": 3000 } ] }
/// ```
///
/// `"base"` is `"factory"` (the default: the file edits and extends the
/// factory bank) or `"empty"`. A preset named like one already in the bank
/// edits it; `"from"` starts a preset from another one's values, otherwise a
/// new preset starts from the defaults listed in PRESETS.md. Every problem is
/// reported as one line naming the file, the preset and the key.
public struct PresetBank: Sendable, Equatable {
    /// In program order.
    public private(set) var presets: [Preset]

    /// The bank Spinet ships: eight musical presets (programs 0-7) and four
    /// plain ones for sound design and measurement (8-11).
    public static let factory: PresetBank = {
        do {
            return try PresetBank(presets: FactoryPresets.all)
        } catch {
            fatalError("factory presets are invalid: \(error)")
        }
    }()

    /// What a synth plays when its bank has no presets: one preset named
    /// `default`, program 0, with the defaults of PRESETS.md.
    public static let fallback: PresetBank = {
        do {
            return try PresetBank(presets: [Preset(name: "default", program: 0)])
        } catch {
            fatalError("the default preset is invalid: \(error)")
        }
    }()

    /// A bank of the given presets; throws on invalid values, duplicate
    /// names or duplicate program numbers.
    public init(presets: [Preset]) throws(PresetError) {
        try self.init(presets: presets, source: "presets")
    }

    init(presets: [Preset], source: String) throws(PresetError) {
        var byProgram: [Int: String] = [:]
        var names: Set<String> = []
        for p in presets {
            try p.validate(source: source)
            if !names.insert(p.name).inserted {
                throw PresetError("\(source): two presets are named \"\(p.name)\"")
            }
            if let other = byProgram[p.program] {
                throw PresetError("\(source): preset \"\(p.name)\": \"program\" \(p.program) is already used by preset \"\(other)\"")
            }
            byProgram[p.program] = p.name
        }
        self.presets = presets.sorted { $0.program < $1.program }
    }

    /// Reads a preset file (see the type's documentation). Not on the render thread.
    public init(jsonFile path: String) throws(PresetError) {
        let bytes: [UInt8]
        do { bytes = try SettingsText.readFile(path, what: path, hint: "a preset file is a JSON file") } catch {
            throw PresetError(error.description)
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw PresetError("\(path): not UTF-8 text") }
        try self.init(json: text, source: path)
    }

    /// Reads presets from JSON text; `source` names it in error messages.
    public init(json text: String, source: String = "presets.json") throws(PresetError) {
        if let problem = SettingsText.sizeProblem(byteCount: text.utf8.count) { throw PresetError("\(source): \(problem)") }
        let root: JSONValue
        do {
            root = try JSONParser.parse(text)
        } catch {
            throw PresetError("\(source): not valid JSON: \(error.description)")
        }
        guard case .object(let members) = root else {
            throw PresetError("\(source): the file must hold an object with a \"presets\" list (got \(root.shortDescription))")
        }
        var base = PresetBank.factory.presets
        var list: [JSONValue]? = nil
        for (key, value) in members {
            switch key {
            case "base":
                guard case .string(let s) = value, s == "factory" || s == "empty" else {
                    throw PresetError("\(source): \"base\" must be \"factory\" or \"empty\" (got \(value.shortDescription))")
                }
                if s == "empty" { base = [] }
            case "presets":
                guard case .array(let items) = value else {
                    throw PresetError("\(source): \"presets\" must be a list of presets (got \(value.shortDescription))")
                }
                list = items
            default:
                throw PresetError("\(source): unknown key \"\(key)\" (the file has \"base\" and \"presets\")")
            }
        }
        guard let items = list else {
            throw PresetError("\(source): the file has no \"presets\" list")
        }
        var presets = base
        var definedInFile: Set<String> = []
        for (index, item) in items.enumerated() {
            let preset = try Self.readPreset(item, index: index, existing: presets, source: source)
            if !definedInFile.insert(preset.name).inserted {
                throw PresetError("\(source): preset \"\(preset.name)\" is defined twice")
            }
            presets.removeAll { $0.name == preset.name }
            if let clash = presets.first(where: { $0.program == preset.program }) {
                let used = Set(presets.map(\.program))
                let free = (0...127).first { !used.contains($0) }.map { " (\($0) is free)" } ?? ""
                throw PresetError("\(source): preset \"\(preset.name)\": \"program\" \(preset.program) is already used by preset \"\(clash.name)\"\(free)")
            }
            presets.append(preset)
        }
        try self.init(presets: presets, source: source)
    }

    private static func readPreset(_ item: JSONValue, index: Int, existing: [Preset], source: String) throws(PresetError) -> Preset {
        guard case .object(let members) = item else {
            throw PresetError("\(source): preset \(index + 1) must be an object (got \(item.shortDescription))")
        }
        guard let nameValue = members.first(where: { $0.key == "name" })?.value else {
            throw PresetError("\(source): preset \(index + 1) has no \"name\"")
        }
        guard case .string(let name) = nameValue else {
            throw PresetError("\(source): preset \(index + 1): \"name\" must be a string (got \(nameValue.shortDescription))")
        }
        if let problem = Preset.nameProblem(name) {
            throw PresetError("\(source): preset \(index + 1): name \(jsonQuoted(name)) \(problem)")
        }
        let here = "\(source): preset \"\(name)\""

        // Starting point: "from", else the preset being edited, else defaults.
        var preset: Preset
        var programGiven = false
        if let fromValue = members.first(where: { $0.key == "from" })?.value {
            guard case .string(let fromName) = fromValue else {
                throw PresetError("\(here): \"from\" must be a preset name (got \(fromValue.shortDescription))")
            }
            guard let from = existing.first(where: { $0.name == Preset.canonicalName(fromName) }) else {
                throw PresetError("\(here): \"from\" names no earlier preset: \"\(fromName)\" (known: \(existing.map(\.name).joined(separator: ", ")))")
            }
            preset = from
            preset.name = name
            if let edited = existing.first(where: { $0.name == name }) { preset.program = edited.program } else { preset.program = -1 }
        } else if let edited = existing.first(where: { $0.name == name }) {
            preset = edited
        } else {
            preset = Preset(name: name, program: -1)
        }

        let numeric = Dictionary(uniqueKeysWithValues: Preset.parameters.map { ($0.key, $0) })
        for (key, value) in members {
            switch key {
            case "name", "from":
                continue
            case "program":
                guard case .number(let d) = value, d == d.rounded() else {
                    throw PresetError("\(here): \"program\" must be a whole number between 0 and 127 (got \(value.shortDescription))")
                }
                guard let program = value.integer(in: 0...127) else {
                    throw PresetError("\(here): \"program\" must be between 0 and 127 (got \(formatNumber(d)))")
                }
                preset.program = program
                programGiven = true
            case "wave", "wave2":
                guard case .string(let s) = value, let w = Waveform(rawValue: s) else {
                    throw PresetError("\(here): \"\(key)\" must be one of \(Self.choiceList(Waveform.allCases.map(\.rawValue))) (got \(value.shortDescription))")
                }
                if key == "wave" { preset.wave = w } else { preset.wave2 = w }
            case "pressure", "polyPressure":
                guard case .string(let s) = value, let d = PressureDestination(rawValue: s) else {
                    throw PresetError("\(here): \"\(key)\" must be one of \(Self.choiceList(PressureDestination.allCases.map(\.rawValue))) (got \(value.shortDescription))")
                }
                if key == "pressure" { preset.pressure = d } else { preset.polyPressure = d }
            default:
                guard let parameter = numeric[key] else {
                    let suggestion = Self.nearestKey(to: key).map { " (did you mean \"\($0)\"?)" } ?? ""
                    throw PresetError("\(here): unknown key \"\(key)\"\(suggestion)")
                }
                guard case .number(let d) = value else {
                    throw PresetError("\(here): \(parameter.rangeText) (got \(value.shortDescription))")
                }
                guard parameter.range.contains(d) else {
                    throw PresetError("\(here): \(parameter.rangeText) (got \(formatNumber(d)))")
                }
                preset[keyPath: parameter.keyPath] = d
            }
        }
        if !programGiven && preset.program < 0 {
            let used = Set(existing.filter { $0.name != name }.map(\.program))
            guard let free = (0...127).first(where: { !used.contains($0) }) else {
                throw PresetError("\(here): all 128 program numbers are taken; remove a preset or use \"base\": \"empty\"")
            }
            preset.program = free
        }
        return preset
    }

    private static func choiceList(_ words: [String]) -> String {
        words.map { "\"\($0)\"" }.joined(separator: ", ")
    }

    /// All keys a preset object may hold.
    static var allKeys: [String] {
        ["name", "from", "program"] + Preset.choiceKeys.map(\.key) + Preset.parameters.map(\.key)
    }

    /// The known key closest to a mistyped one (at most 3 edits), for "did you mean".
    static func nearestKey(to key: String) -> String? {
        var best: String? = nil
        var bestDistance = 4
        let length = key.count   // a key far longer than any known one is near none, and is not compared
        for candidate in allKeys where abs(length - candidate.count) < bestDistance {
            let d = editDistance(key.lowercased(), candidate.lowercased())
            if d < bestDistance {
                best = candidate
                bestDistance = d
            }
        }
        return best
    }

    /// Levenshtein distance.
    static func editDistance(_ s: String, _ t: String) -> Int {
        let a = Array(s), b = Array(t)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var row = Array(0...b.count)
        for i in 1...a.count {
            var diagonal = row[0]
            row[0] = i
            for j in 1...b.count {
                let above = row[j]
                row[j] = min(above + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1))
                diagonal = above
            }
        }
        return row[b.count]
    }

    // MARK: lookup

    /// Preset names in program order.
    public var names: [String] { presets.map(\.name) }

    /// The preset with this name (case-insensitive; spaces and underscores
    /// count as "-"), or nil.
    public func preset(named name: String) -> Preset? {
        let key = Preset.canonicalName(name)
        return presets.first { $0.name == key }
    }

    /// The preset a program change (0...127) selects, or nil.
    public func preset(program: Int) -> Preset? {
        presets.first { $0.program == program }
    }

    /// Index into `presets` for a name, or nil.
    func index(named name: String) -> Int? {
        let key = Preset.canonicalName(name)
        return presets.firstIndex { $0.name == key }
    }

    // MARK: writing

    /// The bank as a preset file (with `"base": "empty"`), every value
    /// spelled out: a starting point for editing.
    public func jsonString() -> String {
        var out = "{\n  \"base\": \"empty\",\n  \"presets\": [\n"
        for (i, p) in presets.enumerated() {
            var fields: [String] = [
                "\"name\": \(jsonQuoted(p.name))",
                "\"program\": \(p.program)",
                "\"wave\": \"\(p.wave.rawValue)\"",
                "\"wave2\": \"\(p.wave2.rawValue)\"",
            ]
            for parameter in Preset.parameters {
                fields.append("\"\(parameter.key)\": \(formatNumber(p[keyPath: parameter.keyPath]))")
            }
            fields.append("\"pressure\": \"\(p.pressure.rawValue)\"")
            fields.append("\"polyPressure\": \"\(p.polyPressure.rawValue)\"")
            out += "    { " + fields.joined(separator: ", ") + " }" + (i + 1 < presets.count ? ",\n" : "\n")
        }
        return out + "  ]\n}\n"
    }
}
