import SpinetSupport

/// An oscillator waveform. All are band-limited (see `SampleRateTables`).
public enum Waveform: String, CaseIterable, Sendable {
    case sine, saw, square, triangle
}

/// Where channel pressure or polyphonic aftertouch goes.
public enum PressureDestination: String, CaseIterable, Sendable {
    /// Adds to the mod wheel's vibrato depth (full pressure = the preset's full vibrato).
    case vibrato
    /// Opens the filter: full pressure raises the cutoff by 24 semitones.
    case brightness
    case none
}

/// A preset file or a preset value could not be used. `description` is one
/// line naming the file, the preset and the key, e.g.
/// `presets.json: preset "lead": "cutoff" must be between 20 and 20000 Hz (got 50000)`.
public struct PresetError: Error, CustomStringConvertible, Sendable, Equatable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// One sound of the oscillator synth: what a program change selects.
///
/// Every value has a documented range (`Preset.parameters`, and
/// `Sources/SpinetSynth/PRESETS.md`); `PresetBank` refuses values outside it.
/// Times are in seconds, levels 0...1, pitches in semitones or cents, and the
/// cutoff in Hz.
public struct Preset: Sendable, Equatable {
    /// Lower-case letters, digits and "-" (it appears on command lines: `synth:saw-lead`).
    public var name: String
    /// The program change (0...127) that selects it.
    public var program: Int

    // Oscillators
    public var wave: Waveform = .saw
    public var wave2: Waveform = .saw
    /// Balance of the two oscillators: 0 = oscillator 1 only, 1 = oscillator 2 only.
    public var mix: Double = 0
    /// Oscillator 2 detune in cents (beating against oscillator 1).
    public var detune: Double = 0
    /// Oscillator 2 transposition in semitones (12 = an octave up).
    public var interval: Double = 0
    /// Transposition of both oscillators in semitones.
    public var transpose: Double = 0
    /// Fraction of the cycle a square wave spends high (0.5 = square).
    public var pulseWidth: Double = 0.5
    /// Where in its cycle each oscillator starts at note-on (0...1).
    public var phase: Double = 0

    // Filter (resonant 12 dB/octave low-pass, zero-delay-feedback state variable)
    public var cutoff: Double = 20_000
    /// 0 = flat (Q 0.707) ... 1 = strongly resonant (Q 25), below self-oscillation.
    public var resonance: Double = 0
    /// Semitones the filter envelope adds at its peak (negative sweeps down).
    public var filterEnvAmount: Double = 0
    /// How far the cutoff follows the key: 1 = an octave per octave, from middle C.
    public var keyTracking: Double = 0
    /// Semitones added to the cutoff at full velocity (after the velocity curve).
    public var velocityToCutoff: Double = 0

    // Amplitude envelope
    public var attack: Double = 0.002
    public var decay: Double = 0.1
    public var sustain: Double = 1
    public var release: Double = 0.05

    // Filter envelope
    public var filterAttack: Double = 0.002
    public var filterDecay: Double = 0.2
    public var filterSustain: Double = 0
    public var filterRelease: Double = 0.1

    // Modulation
    /// Portamento time: seconds to cover 99.9 % of the interval from the previous note.
    public var glide: Double = 0
    public var lfoRate: Double = 5
    /// Vibrato depth in semitones at full mod wheel (CC 1).
    public var vibrato: Double = 0
    /// Semitones the LFO moves the cutoff (always on, for slow filter movement).
    public var lfoToCutoff: Double = 0
    public var pressure: PressureDestination = .vibrato
    public var polyPressure: PressureDestination = .brightness

    // Dynamics
    /// Velocity response: level = (velocity/127)^curve; 1 linear, > 1 needs harder playing.
    public var velocityCurve: Double = 1
    /// How much velocity changes the level: 0 = not at all, 1 = fully.
    public var velocitySensitivity: Double = 1
    /// Preset level in dB.
    public var gain: Double = 0

    public init(name: String, program: Int) {
        self.name = name
        self.program = program
    }

    /// A numeric preset value, its range and unit: the single source for
    /// validation, the JSON reader and writer, and PRESETS.md.
    public struct Parameter: Sendable {
        public let key: String
        public let range: ClosedRange<Double>
        public let unit: String
        let keyPath: WritableKeyPath<Preset, Double> & Sendable
    }

    /// Every numeric parameter, in the order the JSON writer uses.
    public static var parameters: [Parameter] {
        [
            Parameter(key: "mix", range: 0...1, unit: "", keyPath: \.mix),
            Parameter(key: "detune", range: -100...100, unit: "cents", keyPath: \.detune),
            Parameter(key: "interval", range: -36...36, unit: "semitones", keyPath: \.interval),
            Parameter(key: "transpose", range: -36...36, unit: "semitones", keyPath: \.transpose),
            Parameter(key: "pulseWidth", range: 0.05...0.95, unit: "", keyPath: \.pulseWidth),
            Parameter(key: "phase", range: 0...1, unit: "", keyPath: \.phase),
            Parameter(key: "cutoff", range: 20...20_000, unit: "Hz", keyPath: \.cutoff),
            Parameter(key: "resonance", range: 0...1, unit: "", keyPath: \.resonance),
            Parameter(key: "filterEnvAmount", range: -96...96, unit: "semitones", keyPath: \.filterEnvAmount),
            Parameter(key: "keyTracking", range: 0...1.5, unit: "", keyPath: \.keyTracking),
            Parameter(key: "velocityToCutoff", range: 0...96, unit: "semitones", keyPath: \.velocityToCutoff),
            Parameter(key: "attack", range: 0...30, unit: "s", keyPath: \.attack),
            Parameter(key: "decay", range: 0...30, unit: "s", keyPath: \.decay),
            Parameter(key: "sustain", range: 0...1, unit: "", keyPath: \.sustain),
            Parameter(key: "release", range: 0...30, unit: "s", keyPath: \.release),
            Parameter(key: "filterAttack", range: 0...30, unit: "s", keyPath: \.filterAttack),
            Parameter(key: "filterDecay", range: 0...30, unit: "s", keyPath: \.filterDecay),
            Parameter(key: "filterSustain", range: 0...1, unit: "", keyPath: \.filterSustain),
            Parameter(key: "filterRelease", range: 0...30, unit: "s", keyPath: \.filterRelease),
            Parameter(key: "glide", range: 0...10, unit: "s", keyPath: \.glide),
            Parameter(key: "lfoRate", range: 0.01...50, unit: "Hz", keyPath: \.lfoRate),
            Parameter(key: "vibrato", range: 0...12, unit: "semitones", keyPath: \.vibrato),
            Parameter(key: "lfoToCutoff", range: 0...48, unit: "semitones", keyPath: \.lfoToCutoff),
            Parameter(key: "velocityCurve", range: 0.2...5, unit: "", keyPath: \.velocityCurve),
            Parameter(key: "velocitySensitivity", range: 0...1, unit: "", keyPath: \.velocitySensitivity),
            Parameter(key: "gain", range: -48...12, unit: "dB", keyPath: \.gain),
        ]
    }

    /// The keys that take a word rather than a number, with the words allowed.
    public static let choiceKeys: [(key: String, choices: [String])] = [
        ("wave", Waveform.allCases.map(\.rawValue)),
        ("wave2", Waveform.allCases.map(\.rawValue)),
        ("pressure", PressureDestination.allCases.map(\.rawValue)),
        ("polyPressure", PressureDestination.allCases.map(\.rawValue)),
    ]

    /// Checks every value. `source` starts the message (a file name, or
    /// "preset" for presets built in code).
    public func validate(source: String = "presets") throws(PresetError) {
        let where_ = "\(source): preset \"\(name)\""
        if let problem = Self.nameProblem(name) {
            throw PresetError("\(source): preset name \(jsonQuoted(name)) \(problem)")
        }
        if !(0...127).contains(program) {
            throw PresetError("\(where_): \"program\" must be between 0 and 127 (got \(program))")
        }
        for p in Self.parameters {
            let v = self[keyPath: p.keyPath]
            if !(v.isFinite && p.range.contains(v)) {
                throw PresetError("\(where_): \(p.rangeText) (got \(formatNumber(v)))")
            }
        }
    }

    /// Why a name is not usable, or nil.
    static func nameProblem(_ name: String) -> String? {
        if name.isEmpty || name.count > 32 {
            return "must be 1 to 32 characters long"
        }
        let ok = name.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "-" }
        return ok ? nil : "may hold only lower-case letters, digits and \"-\""
    }

    /// The canonical spelling of a name typed by a person: lower case, with
    /// spaces and underscores read as "-".
    static func canonicalName(_ name: String) -> String {
        String(name.lowercased().map { $0 == " " || $0 == "_" ? "-" : $0 })
    }
}

extension Preset.Parameter {
    /// "\"cutoff\" must be between 20 and 20000 Hz"
    var rangeText: String {
        let unitText = unit.isEmpty ? "" : " \(unit)"
        return "\"\(key)\" must be between \(formatNumber(range.lowerBound)) and \(formatNumber(range.upperBound))\(unitText)"
    }
}
