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

    /// Render thread only. Voices currently sounding.
    var activeVoices: Int { get }
}

extension InstrumentUnit {
    public func deliveryFrame(forEventAt frame: Int64) -> Int64 { frame }
}
