/// The presets Spinet ships. Programs 0-7 are musical; 8-11 are the plain
/// waveforms for sound design and measurement: one oscillator, the filter
/// wide open and still, no vibrato, no pressure routing, a 2 ms attack.
enum FactoryPresets {
    static var all: [Preset] {
        [organ, sawLead, squareBass, softPad, pluck, brass, subBass, bell,
         plain("sine", .sine, 8), plain("saw", .saw, 9), plain("square", .square, 10), plain("triangle", .triangle, 11)]
    }

    /// Two drawbars (8' and 4' sines), percussive key click avoided by a 5 ms
    /// attack; the mod wheel brings in a gentle rotary-speaker vibrato.
    static var organ: Preset {
        var p = Preset(name: "organ", program: 0)
        p.wave = .sine; p.wave2 = .sine; p.interval = 12; p.mix = 0.35
        p.cutoff = 9000
        p.attack = 0.005; p.decay = 0.05; p.sustain = 1; p.release = 0.04
        p.filterSustain = 1
        p.lfoRate = 6.7; p.vibrato = 0.25
        p.velocitySensitivity = 0.2
        p.gain = -1
        return p
    }

    /// Two slightly detuned saws through a resonant filter with a short
    /// envelope sweep; glides between notes.
    static var sawLead: Preset {
        var p = Preset(name: "saw-lead", program: 1)
        p.wave = .saw; p.wave2 = .saw; p.mix = 0.5; p.detune = 7
        p.cutoff = 1400; p.resonance = 0.35; p.filterEnvAmount = 24; p.keyTracking = 0.5; p.velocityToCutoff = 12
        p.attack = 0.003; p.decay = 0.3; p.sustain = 0.85; p.release = 0.15
        p.filterAttack = 0.004; p.filterDecay = 0.45; p.filterSustain = 0.3; p.filterRelease = 0.2
        p.glide = 0.08; p.lfoRate = 5.5; p.vibrato = 0.4
        p.velocityCurve = 1.3
        return p
    }

    /// Square plus a sub-octave square, a fast filter snap.
    static var squareBass: Preset {
        var p = Preset(name: "square-bass", program: 2)
        p.wave = .square; p.wave2 = .square; p.interval = -12; p.mix = 0.35; p.pulseWidth = 0.42
        p.cutoff = 320; p.resonance = 0.3; p.filterEnvAmount = 36; p.keyTracking = 0.3; p.velocityToCutoff = 12
        p.attack = 0.001; p.decay = 0.6; p.sustain = 0.75; p.release = 0.07
        p.filterAttack = 0.001; p.filterDecay = 0.22; p.filterSustain = 0.12; p.filterRelease = 0.08
        p.velocityCurve = 1.2
        p.pressure = .brightness
        return p
    }

    /// Wide detuned saws, slow attack and release, the LFO breathing on the filter.
    static var softPad: Preset {
        var p = Preset(name: "soft-pad", program: 3)
        p.wave = .saw; p.wave2 = .saw; p.mix = 0.5; p.detune = 12
        p.cutoff = 900; p.resonance = 0.15; p.filterEnvAmount = 12; p.keyTracking = 0.4
        p.attack = 0.7; p.decay = 1.2; p.sustain = 0.85; p.release = 1.6
        p.filterAttack = 1.2; p.filterDecay = 2.5; p.filterSustain = 0.6; p.filterRelease = 1.6
        p.lfoRate = 0.25; p.lfoToCutoff = 6; p.vibrato = 0.2
        p.velocitySensitivity = 0.5
        p.gain = -2
        return p
    }

    /// A plucked string: bright strike, the filter closing as the note dies.
    static var pluck: Preset {
        var p = Preset(name: "pluck", program: 4)
        p.wave = .saw; p.wave2 = .square; p.interval = 12; p.mix = 0.25
        p.cutoff = 250; p.resonance = 0.25; p.filterEnvAmount = 54; p.keyTracking = 0.7; p.velocityToCutoff = 24
        p.attack = 0; p.decay = 1.1; p.sustain = 0; p.release = 0.25
        p.filterAttack = 0; p.filterDecay = 0.3; p.filterSustain = 0; p.filterRelease = 0.2
        p.velocityCurve = 1.4
        return p
    }

    /// Brass: the filter opens a little after the level (the "blat"), harder
    /// playing is brighter; pressure opens it further.
    static var brass: Preset {
        var p = Preset(name: "brass", program: 5)
        p.wave = .saw; p.wave2 = .saw; p.mix = 0.5; p.detune = 5
        p.cutoff = 500; p.resonance = 0.1; p.filterEnvAmount = 30; p.keyTracking = 0.6; p.velocityToCutoff = 18
        p.attack = 0.04; p.decay = 0.25; p.sustain = 0.85; p.release = 0.18
        p.filterAttack = 0.08; p.filterDecay = 0.6; p.filterSustain = 0.55; p.filterRelease = 0.2
        p.lfoRate = 5.2; p.vibrato = 0.3
        p.pressure = .brightness
        p.velocityCurve = 1.5
        return p
    }

    /// A sine an octave below the key with a hint of triangle for small speakers.
    static var subBass: Preset {
        var p = Preset(name: "sub-bass", program: 6)
        p.wave = .sine; p.wave2 = .triangle; p.mix = 0.2; p.transpose = -12
        p.cutoff = 1200; p.filterSustain = 1
        p.attack = 0.004; p.decay = 0.1; p.sustain = 1; p.release = 0.08
        p.glide = 0.03
        p.velocitySensitivity = 0.6
        p.polyPressure = .none
        p.gain = 2
        return p
    }

    /// Struck metal: a sine and an inharmonic partial at 2.76x (17 semitones
    /// + 58 cents), a long free decay.
    static var bell: Preset {
        var p = Preset(name: "bell", program: 7)
        p.wave = .sine; p.wave2 = .sine; p.interval = 17; p.detune = 58; p.mix = 0.4
        p.cutoff = 12_000; p.filterSustain = 1
        p.attack = 0.001; p.decay = 3.5; p.sustain = 0; p.release = 1.8
        p.velocityCurve = 1.2
        p.polyPressure = .none
        return p
    }

    static func plain(_ name: String, _ wave: Waveform, _ program: Int) -> Preset {
        var p = Preset(name: name, program: program)
        p.wave = wave; p.wave2 = wave; p.mix = 0
        p.cutoff = 20_000; p.resonance = 0; p.filterEnvAmount = 0; p.keyTracking = 0; p.velocityToCutoff = 0
        p.attack = 0.002; p.decay = 0; p.sustain = 1; p.release = 0.03
        p.filterSustain = 1
        p.vibrato = 0; p.lfoToCutoff = 0
        p.pressure = .none; p.polyPressure = .none
        return p
    }
}
