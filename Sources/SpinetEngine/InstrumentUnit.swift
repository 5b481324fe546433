import SpinetMIDI

/// An instrument: turns MIDI messages into stereo sound.
///
/// Life cycle: `prepare` (any thread but the render thread; allocates
/// everything), then any number of `receive`/`render` calls from the render
/// thread only. The engine calls `render` in slices between events, so a
/// unit sees each message at the frame the engine chose for it.
public protocol InstrumentUnit: AnyObject {
    /// A short name for graph dumps and error messages ("soundfont", "synth").
    var name: String { get }

    /// Not on the render thread. Sizes every buffer for at most `maxFrames`
    /// frames per `render` call. `channels` is the number of global MIDI
    /// channels the engine routes (16 per port).
    func prepare(sampleRate: Double, maxFrames: Int, channels: Int)

    /// Render thread only. The engine frame at which this unit wants to
    /// receive an event stamped `frame`. A sample-exact unit returns `frame`.
    /// A unit that applies events on a coarser grid (FluidSynth's 64 frames)
    /// returns the frame that makes the event land nearest its exact time;
    /// the engine never delivers earlier than frames already rendered.
    func deliveryFrame(forEventAt frame: Int64) -> Int64

    /// Render thread only. Applies a message at the current position.
    func receive(_ message: MIDIMessage)

    /// Render thread only. Applies a complete SysEx message (F0 ... F7).
    func receiveSysEx(_ message: UnsafeBufferPointer<UInt8>)

    /// Render thread only. Writes (not adds) `frames` frames of sound.
    /// `frames` may be 0. Allocates nothing, takes no lock, makes no system call.
    func render(left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>, frames: Int)

    /// Render thread only. Writes `frames` frames of dry sound and effect
    /// sends. The default writes `render(left:right:frames:)` and silence.
    func render(_ output: UnitOutput, frames: Int)

    /// Render thread only. Voices currently sounding.
    var activeVoices: Int { get }

    /// Render thread only. How many more events the unit can take before
    /// its next render without dropping any: the engine gathers no more
    /// than that into one slice and leaves the rest in its input queue. A
    /// unit that hands events on as they come has no limit (the default).
    var eventRoom: Int { get }

    /// Events the unit itself dropped (a live flood it could not hold).
    /// Any thread. Default 0.
    var droppedEvents: Int { get }

    /// Events the unit held back to a later block than their own (a flood
    /// it passes on at the pace its synthesizer can take). Any thread. Default 0.
    var delayedEvents: Int { get }
}

/// Where a unit writes one slice of sound: the dry stereo mix and its
/// stereo sends to the shared reverb, chorus and delay (each already scaled
/// by the channel's send level: CC 91, CC 93, CC 94). Pointers are at the
/// slice's first frame.
public struct UnitOutput {
    public var left: UnsafeMutablePointer<Float>
    public var right: UnsafeMutablePointer<Float>
    public var reverbLeft: UnsafeMutablePointer<Float>
    public var reverbRight: UnsafeMutablePointer<Float>
    public var chorusLeft: UnsafeMutablePointer<Float>
    public var chorusRight: UnsafeMutablePointer<Float>
    public var delayLeft: UnsafeMutablePointer<Float>
    public var delayRight: UnsafeMutablePointer<Float>

    public init(left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>,
                reverbLeft: UnsafeMutablePointer<Float>, reverbRight: UnsafeMutablePointer<Float>,
                chorusLeft: UnsafeMutablePointer<Float>, chorusRight: UnsafeMutablePointer<Float>,
                delayLeft: UnsafeMutablePointer<Float>, delayRight: UnsafeMutablePointer<Float>) {
        self.left = left; self.right = right
        self.reverbLeft = reverbLeft; self.reverbRight = reverbRight
        self.chorusLeft = chorusLeft; self.chorusRight = chorusRight
        self.delayLeft = delayLeft; self.delayRight = delayRight
    }

    /// Eight consecutive planar buffers of `stride` frames starting at
    /// `base`: dry left and right, then the reverb, chorus and delay sends.
    public init(planar base: UnsafeMutablePointer<Float>, stride: Int) {
        self.init(left: base, right: base + stride,
                  reverbLeft: base + 2 * stride, reverbRight: base + 3 * stride,
                  chorusLeft: base + 4 * stride, chorusRight: base + 5 * stride,
                  delayLeft: base + 6 * stride, delayRight: base + 7 * stride)
    }

    /// Writes silence to the three sends (`frames` frames).
    @inlinable public func silenceSends(frames: Int) {
        reverbLeft.update(repeating: 0, count: frames)
        reverbRight.update(repeating: 0, count: frames)
        chorusLeft.update(repeating: 0, count: frames)
        chorusRight.update(repeating: 0, count: frames)
        delayLeft.update(repeating: 0, count: frames)
        delayRight.update(repeating: 0, count: frames)
    }

    /// Writes silence to the dry sound and the sends (`frames` frames).
    @inlinable public func silence(frames: Int) {
        left.update(repeating: 0, count: frames)
        right.update(repeating: 0, count: frames)
        silenceSends(frames: frames)
    }

    /// The same buffers `frames` frames further on.
    @inlinable public func advanced(by frames: Int) -> UnitOutput {
        UnitOutput(left: left + frames, right: right + frames,
                   reverbLeft: reverbLeft + frames, reverbRight: reverbRight + frames,
                   chorusLeft: chorusLeft + frames, chorusRight: chorusRight + frames,
                   delayLeft: delayLeft + frames, delayRight: delayRight + frames)
    }
}

extension InstrumentUnit {
    public func deliveryFrame(forEventAt frame: Int64) -> Int64 { frame }
    public var eventRoom: Int { Int.max }
    public var droppedEvents: Int { 0 }
    public var delayedEvents: Int { 0 }

    /// Render thread only. A unit without effect sends: dry sound, silent sends.
    public func render(_ output: UnitOutput, frames: Int) {
        render(left: output.left, right: output.right, frames: frames)
        output.silenceSends(frames: frames)
    }
}

/// A unit whose sound is the sum of parts it can also hand out one by one
/// (a SoundFont player's per-channel outputs): stems without a player per
/// channel. The engine asks for the parts only in stems mode.
public protocol PartedUnit: InstrumentUnit {
    /// How many parts the unit renders (fixed once it exists).
    var partCount: Int { get }
    /// The part channel `channel` alone plays into; nil when it has none of
    /// its own.
    func part(forChannel channel: Int) -> Int?
    /// Render thread only. `render(_:frames:)`, and also each part's dry
    /// sound and sends written (not added) to `parts[p]` advanced by
    /// `partOffset` frames; `output` is exactly what `render(_:frames:)`
    /// writes, the sum of the parts. Allocates nothing.
    func render(_ output: UnitOutput, parts: UnsafePointer<UnitOutput>, partOffset: Int, frames: Int)
    /// Which of part `part`'s sends anything reads besides the unit itself
    /// (the effects of the stem the part is in; none for a part in no
    /// stem). A silent send nothing reads may be left unwritten in the part.
    /// All of them until said otherwise. Before rendering, not on the
    /// render thread.
    func readSends(ofPart part: Int, _ effects: StemEffects)
}

extension PartedUnit {
    public func readSends(ofPart part: Int, _ effects: StemEffects) {}
}
