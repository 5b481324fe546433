/// A shared effect fed by the channels' sends (reverb, chorus, delay): it
/// takes a stereo send input and adds its 100 %-wet stereo return to an
/// output. The input and output are given per call, so one instance can
/// process any bus (the engine's summed sends, or one stem's).
///
/// An effect owns its buffers and need not be copyable (the built-in ones
/// are not): its buffers go when it does, off the render thread.
public protocol SendEffect: ~Copyable {
    /// Render thread only. Adds the return of `frames` frames of input to
    /// the outputs. Any frame count, including 0. Allocates nothing, takes
    /// no lock, makes no system call.
    mutating func process(inputLeft: UnsafePointer<Float>, inputRight: UnsafePointer<Float>,
                          outputLeft: UnsafeMutablePointer<Float>, outputRight: UnsafeMutablePointer<Float>,
                          frames: Int)
    /// How long the return goes on after the input stops, in seconds.
    var tailSeconds: Double { get }
    /// Render thread only. Switches the effect out (its return fades out
    /// and its state is cleared) or back in (it fades in from silence).
    var isBypassed: Bool { get set }
    /// Render thread only. The tempo note-value times follow; effects with
    /// none ignore it (the default).
    mutating func setTempo(bpm: Double)
    /// Render thread only. Silences the effect at once.
    mutating func reset()
    /// Render thread only. Lets `frames` frames pass while the return is
    /// known to be silent (the input has been silent for longer than
    /// `tailSeconds`), its modulation and glides moving on as if it had
    /// processed them, so that it stays in step with an instance that did.
    /// Returns false if the effect cannot (the default): the caller then
    /// processes the frames.
    mutating func rest(frames: Int) -> Bool
}

extension SendEffect where Self: ~Copyable {
    public mutating func setTempo(bpm: Double) {}
    public mutating func rest(frames: Int) -> Bool { false }
}

extension Reverb: SendEffect {}
extension Chorus: SendEffect {}
extension Delay: SendEffect {}
