import Synchronization
import SpinetMIDI

/// An instrument slot whose instrument can be replaced while it plays — a new
/// SoundFont, say — without a gap and without cutting the notes that sound.
///
/// The new instrument is loaded and prepared on a control thread and offered
/// through an atomic slot. At the start of its next `render`, the render
/// thread takes it, plays the channel state it has tracked (bank, program,
/// controllers, pitch bend, pressure) into it, and keeps the old instrument
/// rendering beside it: notes already sounding there ring on and still get
/// their note-offs and pedal changes, while new notes go to the new one. Once
/// the old instrument is silent (or after `ringOutSeconds`, with a short
/// fade) it is handed back through a second atomic slot, and the control
/// thread releases it: nothing is freed on the render thread.
public final class SwappableInstrument: InstrumentUnit, @unchecked Sendable {
    public let name = "swappable"

    private final class Box {
        let unit: any InstrumentUnit
        init(_ unit: any InstrumentUnit) { self.unit = unit }
    }

    // render thread
    private var current: Box
    private var outgoing: Box?
    private var outgoingFramesLeft = 0
    private var fadeFrames = 0
    private var tailFrames = 0
    private var scratch: UnitOutput?      // the old instrument's output, before mixing
    private var maxFrames = 0
    private var sampleRate = 0.0
    private var channels = 0
    private let ringOutSeconds: Double
    /// The channel state, to replay into a new instrument (ChannelState's rule).
    private var state: ChannelState

    // cross-thread hand-over
    private let swaps = HandOver<Box>()
    private let swapping = Atomic<Bool>(false)
    private let prepared = Atomic<Bool>(false)
    // what the instruments dropped and delayed, the retired ones' included
    // (kept by the render thread, read by any)
    private let droppedTotal = Atomic<Int>(0)
    private let delayedTotal = Atomic<Int>(0)
    private var retiredDropped = 0
    private var retiredDelayed = 0

    /// - Parameter ringOutSeconds: how long notes of a replaced instrument may
    ///   ring on before they are faded out.
    public init(_ unit: any InstrumentUnit, channels: Int, ringOutSeconds: Double = 8) {
        current = Box(unit)
        self.ringOutSeconds = ringOutSeconds
        self.channels = channels
        state = ChannelState(channels: channels)
    }

    deinit {
        scratch?.left.deallocate()
    }

    // MARK: control thread

    /// Offers a replacement (prepared here, off the render thread). Returns
    /// false while the previous replacement is still under way.
    @discardableResult
    public func offer(_ unit: any InstrumentUnit) -> Bool {
        collect()
        guard prepared.load(ordering: .acquiring), !swapping.exchange(true, ordering: .acquiringAndReleasing) else { return false }
        unit.prepare(sampleRate: sampleRate, maxFrames: maxFrames, channels: channels)
        swaps.offer(Box(unit))
        return true
    }

    /// True once the last offer has been taken and the old instrument released.
    public var isSwapComplete: Bool {
        collect()
        return !swapping.load(ordering: .acquiring)
    }

    /// Releases an instrument the render thread has handed back (control thread).
    private func collect() {
        if swaps.collect() { swapping.store(false, ordering: .releasing) }
    }

    // MARK: InstrumentUnit

    public func prepare(sampleRate: Double, maxFrames: Int, channels: Int) {
        precondition(channels <= self.channels)
        self.sampleRate = sampleRate
        self.maxFrames = maxFrames
        scratch?.left.deallocate()     // a second prepare (a new block size) replaces the first one's block
        let block = UnsafeMutablePointer<Float>.allocate(capacity: 8 * maxFrames)
        block.initialize(repeating: 0, count: 8 * maxFrames)
        scratch = UnitOutput(planar: block, stride: maxFrames)
        current.unit.prepare(sampleRate: sampleRate, maxFrames: maxFrames, channels: self.channels)
        fadeFrames = max(1, Int(0.05 * sampleRate))
        tailFrames = Int(1.0 * sampleRate)
        prepared.store(true, ordering: .releasing)
    }

    public func deliveryFrame(forEventAt frame: Int64) -> Int64 {
        current.unit.deliveryFrame(forEventAt: frame)
    }

    public func receive(_ message: MIDIMessage) {
        state.remember(message)
        current.unit.receive(message)
        guard let old = outgoing?.unit else { return }
        // The old instrument keeps what ends or shapes its notes, not new notes.
        switch message {
        case .noteOff, .polyPressure, .controlChange, .channelPressure, .pitchBend, .systemReset:
            old.receive(message)
        case .noteOn(_, _, let v):
            if v == 0 { old.receive(message) }
        case .programChange:
            break
        }
    }

    public func receiveSysEx(_ message: UnsafeBufferPointer<UInt8>) {
        state.remember(sysEx: message)
        current.unit.receiveSysEx(message)
    }

    /// Dry sound and effect sends: both instruments' sends reach the engine's effects.
    public func render(_ output: UnitOutput, frames: Int) {
        takePending()
        defer { countEvents() }
        current.unit.render(output, frames: frames)
        guard let old = outgoing?.unit, let scratch, frames > 0 else { return }
        old.render(scratch, frames: frames)
        mix(scratch.left, into: output.left, frames)
        mix(scratch.right, into: output.right, frames)
        mix(scratch.reverbLeft, into: output.reverbLeft, frames)
        mix(scratch.reverbRight, into: output.reverbRight, frames)
        mix(scratch.chorusLeft, into: output.chorusLeft, frames)
        mix(scratch.chorusRight, into: output.chorusRight, frames)
        mix(scratch.delayLeft, into: output.delayLeft, frames)
        mix(scratch.delayRight, into: output.delayRight, frames)
        advanceRingOut(old, frames)
    }

    public func render(left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>, frames: Int) {
        takePending()
        defer { countEvents() }
        current.unit.render(left: left, right: right, frames: frames)
        guard let old = outgoing?.unit, let scratch, frames > 0 else { return }
        old.render(left: scratch.left, right: scratch.right, frames: frames)
        mix(scratch.left, into: left, frames)
        mix(scratch.right, into: right, frames)
        advanceRingOut(old, frames)
    }

    @inline(__always)
    private func takePending() {
        guard outgoing == nil else { return }
        if let box = swaps.take() { takeOver(box.takeRetainedValue()) }
    }

    /// Adds the old instrument's sound; near the end of the ring-out time, with a linear fade.
    @inline(__always)
    private func mix(_ source: UnsafeMutablePointer<Float>, into destination: UnsafeMutablePointer<Float>, _ frames: Int) {
        if outgoingFramesLeft - frames >= fadeFrames {
            for i in 0..<frames { destination[i] += source[i] }
            return
        }
        for i in 0..<frames {
            let remaining = outgoingFramesLeft - i
            let g: Float = remaining >= fadeFrames ? 1 : Float(max(0, remaining)) / Float(fadeFrames)
            destination[i] += source[i] * g
        }
    }

    private func advanceRingOut(_ old: any InstrumentUnit, _ frames: Int) {
        outgoingFramesLeft -= frames
        // Its last voice ended: let its reverb tail out for a second, then retire it.
        if old.activeVoices == 0 && outgoingFramesLeft > tailFrames { outgoingFramesLeft = tailFrames }
        if outgoingFramesLeft <= 0 { retire() }
    }

    /// What both instruments can take (the engine holds back the rest).
    public var eventRoom: Int {
        min(current.unit.eventRoom, outgoing?.unit.eventRoom ?? Int.max)
    }

    public var activeVoices: Int {
        current.unit.activeVoices + (outgoing?.unit.activeVoices ?? 0)
    }

    // MARK: render thread helpers

    private func takeOver(_ box: Box) {
        outgoing = current
        current = box
        outgoingFramesLeft = Int(ringOutSeconds * sampleRate)
        let unit = box.unit
        state.replay { unit.receive($0) }
    }

    /// Publishes what the instruments dropped and delayed so far. Render thread.
    @inline(__always)
    private func countEvents() {
        droppedTotal.store(retiredDropped + current.unit.droppedEvents + (outgoing?.unit.droppedEvents ?? 0), ordering: .relaxed)
        delayedTotal.store(retiredDelayed + current.unit.delayedEvents + (outgoing?.unit.delayedEvents ?? 0), ordering: .relaxed)
    }

    public var droppedEvents: Int { droppedTotal.load(ordering: .relaxed) }
    public var delayedEvents: Int { delayedTotal.load(ordering: .relaxed) }

    private func retire() {
        guard let box = outgoing else { return }
        retiredDropped += box.unit.droppedEvents
        retiredDelayed += box.unit.delayedEvents
        // Hand the last reference to the control thread: +1 here, -1 there.
        swaps.retire(.passRetained(box))
        outgoing = nil
    }
}
