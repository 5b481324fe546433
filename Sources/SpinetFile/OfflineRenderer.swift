import Glibc
import SpinetEngine
import SpinetMIDI

/// What an offline render did, for the summary line.
public struct RenderReport: Sendable {
    public var sampleRate: Int
    /// Frames of music (to the last event / End of Track).
    public var musicFrames: Int64
    /// Frames written (music plus the decay tail).
    public var outputFrames: Int64
    public var peak: Float
    public var peakVoices: Int
    public var droppedEvents: Int
    /// Events a SoundFont player passed on blocks after their own under a
    /// flood (every one played, late: a flood is delayed, never dropped).
    public var delayedEvents: Int = 0
    /// SysEx messages longer than the engine passes on (`Engine.Configuration.maxSysExBytes`),
    /// skipped: Spinet acts on none of them (sample dumps and the like).
    public var skippedSysEx: Int = 0
    public var lateEvents: Int
    /// True when the tail was cut (with a fade) at the cap because sound never decayed.
    public var tailCapped: Bool
    public var interrupted: Bool
    public var peakDBFS: Double { peak > 0 ? 20 * log10(Double(peak)) : -Double.infinity }
}

/// Drives an `Engine` as fast as possible from a `MIDISchedule`: the offline
/// twin of the live audio callback, through the same input queue. It uses
/// `Engine.renderOverlapped`, so that with offline worker threads the
/// mixing, effects and limiter of one block run beside the units of the
/// next; the output is the same as `render`'s on any number of threads.
///
/// The render ends when the music has ended and the sound has decayed below
/// `silenceDBFS` for `silenceWindow` seconds; the trailing quiet part is not
/// written, so nothing is padded. Sound that never decays (a held looping
/// note) is faded out over `fadeSeconds` once the tail reaches `tailCap`.
public final class OfflineRenderer {
    public struct Options: Sendable {
        public var blockFrames = 1024
        public var silenceDBFS = -90.0
        public var silenceWindow = 1.0
        public var tailCap = 10.0
        public var fadeSeconds = 0.05
        public init() {}
    }

    public let engine: Engine
    public let queue: EventQueue
    public let schedule: MIDISchedule
    public let options: Options

    /// The engine must be prepared with `maxFrames >= options.blockFrames`;
    /// `queue` must be one of its inputs and no other thread may push to it.
    public init(engine: Engine, queue: EventQueue, schedule: MIDISchedule, options: Options = Options()) {
        self.engine = engine
        self.queue = queue
        self.schedule = schedule
        self.options = options
    }

    /// The output side of a render: each finished block's peak and loudness,
    /// the quiet frames held back, and the sink. It runs as the engine's
    /// side task (`Engine.renderOverlapped(alongside:)`), one block behind
    /// the engine, on whichever render thread is free: writing overlaps the
    /// rendering of the next blocks instead of following it.
    private final class Output {
        let threshold: Float
        let musicEnd: Int64
        let holdL: UnsafeMutablePointer<Float>, holdR: UnsafeMutablePointer<Float>
        var held = 0
        var written: Int64 = 0
        var peak: Float = 0
        var failure: (any Error)?
        // the block to take: its buffers, frames, and frames to drop at its start
        var left: UnsafeMutablePointer<Float>?
        var right: UnsafeMutablePointer<Float>?
        var frames = 0
        var skip = 0
        var sink: ((UnsafePointer<Float>, UnsafePointer<Float>, Int) throws -> Void)?
        /// Stems: how many, the block's stem buffers (pairs of pointers, left
        /// then right), their hold buffers (left then right per stem), and
        /// where they go. They follow the mix frame for frame: the same
        /// frames are dropped, held and written.
        let stemCount: Int
        var stems: UnsafePointer<UnsafeMutablePointer<Float>>?
        let stemHold: UnsafeMutablePointer<Float>?
        let holdCapacity: Int
        var stemSink: ((Int, UnsafePointer<Float>, UnsafePointer<Float>, Int) throws -> Void)?

        init(threshold: Float, musicEnd: Int64, holdCapacity: Int, stemCount: Int = 0) {
            self.threshold = threshold
            self.musicEnd = musicEnd
            self.holdCapacity = holdCapacity
            self.stemCount = stemCount
            holdL = .allocate(capacity: holdCapacity)
            holdR = .allocate(capacity: holdCapacity)
            stemHold = stemCount > 0 ? .allocate(capacity: 2 * stemCount * holdCapacity) : nil
        }

        deinit { holdL.deallocate(); holdR.deallocate(); stemHold?.deallocate() }

        @inline(__always)
        func stemHold(_ s: Int) -> (UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>) {
            let l = stemHold! + 2 * s * holdCapacity
            return (l, l + holdCapacity)
        }

        /// Takes the block set up in `left`/`right`/`frames`/`skip`: frames
        /// up to the last loud one (and all before the end of the music) go
        /// to the sink, quiet ones after it wait in the hold buffer.
        func take() {
            guard failure == nil, let left, let right, let sink else { return }
            let m = frames - skip
            guard m > 0 else { return }
            let outStart = written + Int64(held)
            var lastLoud = -1
            for i in skip..<frames {
                let a = max(abs(left[i]), abs(right[i]))
                if a > peak { peak = a }
                if a > threshold { lastLoud = i - skip }
            }
            // Frames before the end of the music are always kept.
            let keepThrough = max(lastLoud, Int(min(Int64(m), max(0, musicEnd - outStart))) - 1)
            (holdL + held).update(from: left + skip, count: m)
            (holdR + held).update(from: right + skip, count: m)
            if let stems {
                for s in 0..<stemCount {
                    let (l, r) = stemHold(s)
                    (l + held).update(from: stems[2 * s] + skip, count: m)
                    (r + held).update(from: stems[2 * s + 1] + skip, count: m)
                }
            }
            held += m
            if keepThrough >= 0 {
                let flush = held - m + keepThrough + 1
                do {
                    try sink(holdL, holdR, flush)
                    if let stemSink {
                        for s in 0..<stemCount {
                            let (l, r) = stemHold(s)
                            try stemSink(s, l, r, flush)
                        }
                    }
                } catch {
                    failure = error
                    return
                }
                written += Int64(flush)
                held -= flush
                if held > 0 {
                    holdL.update(from: holdL + flush, count: held)
                    holdR.update(from: holdR + flush, count: held)
                    for s in 0..<stemCount {
                        let (l, r) = stemHold(s)
                        l.update(from: l + flush, count: held)
                        r.update(from: r + flush, count: held)
                    }
                }
            }
        }
    }

    /// Renders everything. `sink` receives output in order (on any of the
    /// render threads, one call at a time); `progress` gets the fraction of
    /// the music done; `shouldStop` is polled once a block.
    ///
    /// `stemSink` (an engine with stems, `Engine.setStems`): receives each
    /// stem's frames (stem index, left, right, count) right after the mix's
    /// same frames went to `sink`; every stem is as long as the mix.
    public func run(sink: (UnsafePointer<Float>, UnsafePointer<Float>, Int) throws -> Void,
                    stemSink: ((Int, UnsafePointer<Float>, UnsafePointer<Float>, Int) throws -> Void)? = nil,
                    progress: (Double) -> Void = { _ in },
                    shouldStop: () -> Bool = { false }) throws -> RenderReport {
        precondition(engine.maxFrames >= options.blockFrames, "prepare the engine for at least blockFrames")
        let block = options.blockFrames
        let rate = Double(schedule.sampleRate)
        let latency = Int64(engine.latencyFrames)
        let events = schedule.events
        let musicEnd = max(schedule.endFrame, events.last?.frame ?? 0)
        let silenceFrames = Int64(options.silenceWindow * rate)
        // Saturating: a damaged file's music can end near Int64.max.
        let (capSum, capOverflow) = musicEnd.addingReportingOverflow(Int64(options.tailCap * rate))
        let capFrame = capOverflow ? Int64.max : capSum
        let fadeFrames = max(1, Int(options.fadeSeconds * rate))

        // Two output buffers: the engine finishes a block into one while the
        // block before waits in the other to be taken.
        let buffers = UnsafeMutablePointer<Float>.allocate(capacity: 4 * block)
        defer { buffers.deallocate() }
        // Quiet frames after the music, held back until sound resumes or the render ends.
        let stemCount = stemSink == nil ? 0 : engine.stemCount
        let output = Output(threshold: Float(pow(10, options.silenceDBFS / 20)), musicEnd: musicEnd,
                            holdCapacity: Int(silenceFrames) + block, stemCount: stemCount)
        // Stem buffers, two sets as for the mix, and their pointers (left, right per stem).
        let stemBuffers = UnsafeMutablePointer<Float>.allocate(capacity: max(1, 4 * stemCount * block))
        defer { stemBuffers.deallocate() }
        stemBuffers.initialize(repeating: 0, count: max(1, 4 * stemCount * block))
        let stemPointers = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: max(1, 4 * stemCount))
        defer { stemPointers.deallocate() }
        for i in 0..<(4 * stemCount) { (stemPointers + i).initialize(to: stemBuffers + i * block) }
        let take = { output.take() }

        var next = 0
        var skippedSysEx = 0
        // A SysEx longer than the engine passes on would only be dropped there,
        // and one longer than the queue's byte ring could never be pushed:
        // retrying it would render one frame at a time forever. It is skipped
        // here, and counted.
        let longestSysEx = min(engine.configuration.maxSysExBytes, queue.byteCapacity)
        var nextTempo = 0
        let tempos = schedule.tempoChanges
        var rendered: Int64 = 0          // engine frames whose units are rendered
        var produced: Int64 = 0          // engine frames finished (one block behind `rendered`)
        var fading = false
        var tailCapped = false
        var interrupted = false
        var lastProgress = -1.0
        var current = 0                  // the buffer the engine finishes into next

        let noStems: (Int, UnsafePointer<Float>, UnsafePointer<Float>, Int) throws -> Void = { _, _, _, _ in }
        try withoutActuallyEscaping(sink) { sink in
          try withoutActuallyEscaping(stemSink ?? noStems) { stemSink in
            output.sink = sink
            output.stemSink = stemCount > 0 ? stemSink : nil
            defer { output.sink = nil; output.stemSink = nil }
            while true {
                if shouldStop() { interrupted = true; break }
                // Hand the engine this block's events through the same queue the live driver uses.
                let blockEnd = rendered + Int64(block)
                // Tempo-synced effects follow the file's tempo, from the block its change falls in.
                while nextTempo < tempos.count && tempos[nextTempo].frame < blockEnd {
                    engine.setTempo(beatsPerMinute: 60_000_000 / Double(max(tempos[nextTempo].microsecondsPerQuarter, 1)))
                    nextTempo += 1
                }
                while next < events.count && events[next].frame < blockEnd {
                    let e = events[next]
                    let ok: Bool
                    switch e.kind {
                    // (a refusal is no drop here: the event is offered again next block)
                    case .message(let m): ok = queue.push(EngineEvent(frame: e.frame, m), countingDrop: false)
                    case .sysEx(let i):
                        let length = schedule.sysEx[i].count
                        if length == 0 || length > longestSysEx {
                            skippedSysEx += 1
                            next += 1
                            continue
                        }
                        ok = queue.pushSysEx(frame: e.frame, schedule.sysEx[i], countingDrop: false)
                    }
                    if !ok { break }
                    next += 1
                }
                var n = block
                if next < events.count && events[next].frame < blockEnd {
                    // queue full: render up to the first event that did not fit, then refill
                    n = max(1, Int(events[next].frame - rendered))
                }
                let left = buffers + 2 * current * block, right = left + block
                let stems: UnsafePointer<UnsafeMutablePointer<Float>>? = stemCount > 0 ? UnsafePointer(stemPointers + 2 * current * stemCount) : nil
                let done = engine.renderOverlapped(frames: n, left: left, right: right, stems: stems,
                                                   alongside: output.frames > 0 ? take : nil)
                if let failure = output.failure { throw failure }
                rendered += Int64(n)
                produced += Int64(done)

                // Drop the limiter's look-ahead from the front so output frame = event frame.
                output.left = left
                output.right = right
                output.stems = stems
                output.frames = done
                output.skip = Int(max(0, min(Int64(done), latency - (produced - Int64(done)))))
                current = 1 - current

                let outFrame = produced - latency
                let f = min(1, Double(max(outFrame, 0)) / Double(max(musicEnd, 1)))
                if f - lastProgress >= 0.001 || f == 1 { progress(f); lastProgress = f }

                let allQueued = next == events.count
                // Ends once the output side has seen the music end and enough
                // silence: it has taken every frame but the block just finished.
                let taken = produced - Int64(output.frames)
                if allQueued && taken - latency >= musicEnd && Int64(output.held) >= silenceFrames { break }
                if allQueued && !fading && outFrame + Int64(fadeFrames) + latency >= capFrame {
                    engine.requestFadeOut(frames: fadeFrames)
                    fading = true
                    tailCapped = true
                }
            }
          }
        }
        let written = output.written
        let peak = output.peak
        let stats = engine.statistics
        return RenderReport(sampleRate: schedule.sampleRate, musicFrames: musicEnd, outputFrames: written,
                            peak: peak, peakVoices: stats.peakVoices, droppedEvents: stats.droppedEvents, delayedEvents: stats.delayedEvents,
                            skippedSysEx: skippedSysEx + stats.oversizeSysEx, lateEvents: stats.lateEvents, tailCapped: tailCapped, interrupted: interrupted)
    }
}
