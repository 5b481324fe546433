import Glibc

/// A preset turned into the numbers a voice needs at one sample rate: times
/// in samples, pitches in semitones, rates per sample. No references, so the
/// render thread copies it without retain/release.
struct Patch {
    var wave1: Waveform
    var wave2: Waveform
    /// Semitones added to the key for each oscillator.
    var pitch1Offset: Float
    var pitch2Offset: Float
    var mix1: Float
    var mix2: Float
    /// Pulse width as a phase offset (square waves only, else 0).
    var pulseOffset1: UInt32
    var pulseOffset2: UInt32
    var startPhase: UInt32
    /// Cutoff as a MIDI pitch (69 = 440 Hz), before modulation.
    var cutoffPitch: Float
    /// 1/Q of the state-variable filter.
    var resonanceK: Float
    var filterEnvAmount: Float
    var keyTracking: Float
    var velocityToCutoff: Float
    var attack: Float
    var decay: Float
    var sustain: Float
    var release: Float
    var filterAttack: Float
    var filterDecay: Float
    var filterSustain: Float
    var filterRelease: Float
    /// log2 of the glide's per-sample decay factor; 0 = no glide.
    var glideLog2Rate: Float
    var lfoCyclesPerSample: Float
    var vibrato: Float
    var lfoToCutoff: Float
    var pressureToVibrato: Float
    var pressureToBrightness: Float
    var polyPressureToVibrato: Float
    var polyPressureToBrightness: Float
    var velocityCurve: Float
    var velocitySensitivity: Float
    var level: Float

    /// Semitones full pressure adds to the cutoff when routed to brightness.
    static let pressureBrightness: Float = 24

    init(_ p: Preset, sampleRate: Double) {
        wave1 = p.wave
        wave2 = p.wave2
        pitch1Offset = Float(p.transpose)
        pitch2Offset = Float(p.transpose + p.interval + p.detune / 100)
        mix1 = Float(1 - p.mix)
        mix2 = Float(p.mix)
        let pulse = UInt32(min(max(p.pulseWidth, 0.05), 0.95) * 4_294_967_296)
        pulseOffset1 = p.wave == .square ? pulse : 0
        pulseOffset2 = p.wave2 == .square ? pulse : 0
        startPhase = UInt32(min(max(p.phase, 0), 1) * 4_294_967_295)
        cutoffPitch = Float(69 + 12 * log2(p.cutoff / 440))
        // Q from 0.707 (flat) to about 25 (strong resonance, still stable)
        resonanceK = Float(1 / (0.707 * pow(2, p.resonance * 5.15)))
        filterEnvAmount = Float(p.filterEnvAmount)
        keyTracking = Float(p.keyTracking)
        velocityToCutoff = Float(p.velocityToCutoff)
        attack = Float(p.attack * sampleRate)
        decay = Float(p.decay * sampleRate)
        sustain = Float(p.sustain)
        release = Float(p.release * sampleRate)
        filterAttack = Float(p.filterAttack * sampleRate)
        filterDecay = Float(p.filterDecay * sampleRate)
        filterSustain = Float(p.filterSustain)
        filterRelease = Float(p.filterRelease * sampleRate)
        // 99.9 % of the way (-60 dB of the interval) in `glide` seconds
        glideLog2Rate = p.glide > 0 ? Float(log2(0.001) / (p.glide * sampleRate)) : 0
        lfoCyclesPerSample = Float(p.lfoRate / sampleRate)
        vibrato = Float(p.vibrato)
        lfoToCutoff = Float(p.lfoToCutoff)
        func routes(_ d: PressureDestination) -> (vibrato: Float, brightness: Float) {
            switch d {
            case .vibrato: return (1, 0)
            case .brightness: return (0, Self.pressureBrightness)
            case .none: return (0, 0)
            }
        }
        (pressureToVibrato, pressureToBrightness) = routes(p.pressure)
        (polyPressureToVibrato, polyPressureToBrightness) = routes(p.polyPressure)
        velocityCurve = Float(p.velocityCurve)
        velocitySensitivity = Float(p.velocitySensitivity)
        level = Float(pow(10, p.gain / 20))
    }
}

/// What one MIDI channel holds. Derived values (`pitchOffset`, `brightness`,
/// `gainLeft/Right`) are recomputed when a message changes their inputs, so
/// voices only read them.
struct ChannelState {
    var patch: Int32 = 0
    /// -1 ... +1 (8191 above centre maps to exactly +1).
    var bend: Float = 0
    /// RPN 0, in semitones (MSB) and cents (LSB).
    var bendSemitones: Float = 2
    var bendCents: Float = 0
    /// This channel's bend plus, for an MPE member, its manager's: what voices add.
    var pitchOffset: Float = 0
    /// CC 74, -1 ... +1 (64 = 0).
    var timbre: Float = 0
    /// Semitones CC 74 adds to the cutoff (plus the manager's for an MPE member).
    var brightness: Float = 0
    var pressure: Float = 0
    var modulation: Float = 0
    var volume: UInt8 = 100
    var expression: UInt8 = 127
    var pan: UInt8 = 64
    var gainLeft: Float = 0
    var gainRight: Float = 0
    /// Effect send levels, 0...1 (CC 91 reverb, CC 93 chorus, CC 94 delay,
    /// value/127): the share of the channel's panned output that goes to
    /// Spinet's shared reverb, chorus and delay. The defaults are the ones
    /// the SoundFont unit assumes (GM2: reverb 40, chorus 0; delay 0), so a
    /// synth channel and a SoundFont channel sit in the same space.
    var reverbSend: Float = OscillatorSynth.defaultReverbSend
    var chorusSend: Float = OscillatorSynth.defaultChorusSend
    var delaySend: Float = OscillatorSynth.defaultDelaySend
    var sustain = false
    var sostenuto = false
    var soft = false
    var portamento = true
    var rpnMSB: UInt8 = 127
    var rpnLSB: UInt8 = 127
    var nrpnSelected = false
    /// MPE: the manager channel of this member channel's zone, or -1.
    var manager: Int32 = -1
    /// The last key played (for glide), or -1.
    var lastKey: Float = -1
}

/// What a voice slot is doing.
enum VoiceState: UInt8 {
    case free
    /// Sounding: key down, or key up but held by the sustain or sostenuto pedal.
    case held
    /// In its release after note-off (or all notes off).
    case released
    /// Being faded out quickly (stolen, replaced, or all sound off); no
    /// longer counts against the polyphony.
    case fading
}

/// Envelope segments.
enum EnvelopeStage: UInt8 {
    case attack, decay, sustain, release, idle
}

/// The scalar side of a voice slot (its lanes hold the audio state).
struct Voice {
    var state: VoiceState = .free
    var ampStage: EnvelopeStage = .idle
    var filterStage: EnvelopeStage = .idle
    var keyDown = false
    /// Held by the sostenuto pedal (it was down when the pedal went down).
    var sostenuto = false
    var key: UInt8 = 0
    var channel: Int32 = 0
    /// The channel whose pedals, volume and pan apply: the MPE manager for a member channel.
    var controlChannel: Int32 = 0
    var patch: Int32 = 0
    /// Note-on order, for stealing the oldest.
    var stamp: UInt64 = 0
}

/// One envelope across a group's lanes, as a chain of exponential segments.
///
/// A segment heads for an overshoot `target` beyond its `stop` level and is
/// cut off there: level(n) = target + (level - target)·2^(log2Rate·n). With the
/// overshoot set from a curve ratio r, it reaches `stop` in exactly the set
/// time: r = 0.3 for attacks (the concave charge curve of an analog
/// envelope), r = 0.001 for decays and releases (exponential down to -60 dB
/// of the step, then exactly the target, so releases end in silence at the
/// set time). No segment is shorter than `OscillatorSynth.minimumRampSeconds`,
/// and a short one gets a larger ratio, closer to a straight line, so that
/// its first step is never steeper than a straight ramp over that time (see
/// `TableView.curveRatio`): attack 0 and release 0 do not click.
/// `direction` is +1 or -1 while a segment runs, 0 when holding.
struct EnvelopeLanes {
    var level = Lanes()
    var target = Lanes()
    var log2Rate = Lanes()
    var stop = Lanes()
    var direction = Lanes()

    /// Moves every lane `n` samples on; returns the lanes whose segment ended
    /// (their level is then exactly `stop`). Render thread.
    @_transparent
    mutating func advance(_ n: Float) -> LaneMask {
        var next = target + (level - target) * fastExp2(log2Rate * n)
        let reached = ((next - stop) * direction .>= 0) .& (direction .!= 0)
        next = next.replacing(with: stop, where: reached)
        level = next
        return reached
    }

    /// Starts a segment in one lane. `from` is the level the segment's shape
    /// is designed from (0 for an attack, 1 for a decay, the current level for
    /// a release); the lane continues from its current level on that curve.
    mutating func start(lane l: Int, from: Float, to stop: Float, samples: Float, ratio: Float) {
        let r = ratio
        self.stop[l] = stop
        target[l] = stop + r * (stop - from)
        log2Rate[l] = log2f(r / (1 + r)) / max(samples, 1)
        direction[l] = stop >= from ? 1 : -1
    }

    /// Holds a lane at a level (sustain, or idle at 0).
    mutating func hold(lane l: Int, at value: Float) {
        level[l] = value
        target[l] = value
        stop[l] = value
        log2Rate[l] = 0
        direction[l] = 0
    }
}

/// A group of voices rendered together, one per SIMD lane. Values are kept
/// at the last control point (the end of the last rendered frame).
struct VoiceGroup {
    // Oscillators
    var phase1 = LaneBits()
    var phase2 = LaneBits()
    var increment1 = LaneBits()
    var increment2 = LaneBits()
    /// The same increments as floats (for computing ramps without integer division).
    var incrementValue1 = Lanes()
    var incrementValue2 = Lanes()
    var baseIncrement1 = Lanes()
    var baseIncrement2 = Lanes()
    var pitch1 = Lanes()
    var pitch2 = Lanes()
    /// Table offset of mip 0 of each oscillator's waveform, and the step
    /// from mip to mip (0 for the sine's single table), as floats.
    var waveBase1 = Lanes()
    var waveBase2 = Lanes()
    var mipStride1 = Lanes()
    var mipStride2 = Lanes()
    var pulseOffset1 = LaneBits()
    var pulseOffset2 = LaneBits()
    var mix1 = Lanes()
    var mix2 = Lanes()
    // Filter: integrator states and coefficients (TPT state-variable filter)
    var filterState1 = Lanes()
    var filterState2 = Lanes()
    /// The filter's state-update matrix (see `FilterBlock`).
    var filterM11 = Lanes()
    var filterM12 = Lanes()
    var filterM21 = Lanes()
    var filterM22 = Lanes()
    var resonanceK = Lanes()
    var cutoffBase = Lanes()
    var filterEnvAmount = Lanes()
    var lfoToCutoff = Lanes()
    // Envelopes
    var amp = EnvelopeLanes()
    var filterEnvelope = EnvelopeLanes()
    // Modulation
    var glide = Lanes()
    var glideLog2Rate = Lanes()
    var lfoPhase = Lanes()
    var lfoRate = Lanes()
    var vibratoDepth = Lanes()
    var lastModulation = Lanes()
    var pressureToVibrato = Lanes()
    var pressureToBrightness = Lanes()
    var polyPressureToVibrato = Lanes()
    var polyPressureToBrightness = Lanes()
    var polyPressure = Lanes()
    // Smoothed controls
    var brightness = Lanes()
    var vibratoAmount = Lanes()
    var gainLeft = Lanes()
    var gainRight = Lanes()
    /// Effect send levels, smoothed like the gains toward the targets: the
    /// control channel's levels, copied in when a voice starts and when a
    /// send controller or a reset changes them (rare), so the renderer
    /// never reads channel state for sends.
    var reverbSend = Lanes()
    var chorusSend = Lanes()
    var delaySend = Lanes()
    var reverbTarget = Lanes()
    var chorusTarget = Lanes()
    var delayTarget = Lanes()
    /// False when every lane's send levels and targets are 0: the renderer
    /// then skips the send work for the group without looking at its lanes.
    var sendsLive = false
    var velocityGain = Lanes()
    /// Output weights (amplitude envelope x gains, halved for the filter's
    /// (s2 + s2') output) at the last control point.
    var weightLeft = Lanes()
    var weightRight = Lanes()
    /// 1 in a lane whose voice just started: its first control block starts
    /// its ramps at their end values instead of at stale ones.
    var fresh = Lanes()
    var channel = LaneInts()
    var controlChannel = LaneInts()
}
