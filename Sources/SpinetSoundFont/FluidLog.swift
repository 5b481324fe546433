import CFluidSynth
import Glibc
import Synchronization
import SpinetEngine

/// Routes FluidSynth's log through Spinet.
///
/// FluidSynth has one log function per process (`fluid_set_log_function`),
/// so the handler is process-wide; where a message goes is decided per
/// thread and per unit. While a `SoundFontUnit` works on the render path
/// (`render`, `receive`, `receiveSysEx`) it names its own `RealtimeLog` in a
/// thread-specific slot (`enterRender`/`leaveRender`), and a message raised
/// there is copied into that log (no printing, no allocation, no lock). So
/// two units rendering on two threads at once (the offline workers, or two
/// plugin instances in one host) each keep their own messages, and neither
/// takes the allocating path below. A message on a thread loading a font
/// (loads are serialized) is collected so the loader can name the reason in
/// its error; anything else keeps the last few for `takeCollected`.
enum FluidLog {
    private static let collected = Locked<[String]>([])
    private static let stray = Locked<[String]>([])
    /// Per thread: the `RealtimeLog` of the unit working on the render path
    /// on that thread (nil: none). Created in `install`, off the render thread.
    nonisolated(unsafe) private static var renderKey = pthread_key_t()
    /// Every unit's render log, for `drainRenderLogs` (units register in
    /// `init`; a log whose unit is gone is dropped once drained).
    private static let logs = Locked<[(owner: WeakOwner, log: RealtimeLog)]>([])
    /// The thread loading a font (one at a time): its messages are collected
    /// even when it rendered before (a batch job's thread loads the next
    /// file's synths), since the load reads them.
    private static let loadingThread = Atomic<UInt>(0)
    private static let installed = Atomic<Bool>(false)

    static func install() {
        if installed.exchange(true, ordering: .acquiringAndReleasing) { return }
        // Statics are created lazily on first use; create these here, off the
        // render thread, so FluidSynth's first warning there allocates nothing.
        _ = loadingThread.load(ordering: .relaxed)
        pthread_key_create(&renderKey, nil)
        let handler: fluid_log_function_t = { level, message, _ in
            guard let message else { return }
            let me = UInt(pthread_self())
            if FluidLog.loadingThread.load(ordering: .relaxed) != me, let log = pthread_getspecific(FluidLog.renderKey) {
                let realtimeLog = Unmanaged<RealtimeLog>.fromOpaque(log).takeUnretainedValue()
                // FluidSynth's voice-update ring was full: updates (a
                // note-off among them, maybe) were lost; the unit counts them
                // (a StaticString: a literal passed as a C string allocates in an unoptimized build)
                let ringFull: StaticString = "Ringbuffer full"
                let prefix = UnsafeRawPointer(ringFull.utf8Start).assumingMemoryBound(to: CChar.self)
                if strncmp(message, prefix, ringFull.utf8CodeUnitCount) == 0 { realtimeLog.losses.add(1, ordering: .relaxed) }
                realtimeLog.post(message)
                return
            }
            // Debug and info chatter is not for users.
            guard level <= Int32(FLUID_WARN.rawValue) else { return }
            let text = String(cString: message)
            // While a font loads, every message is kept (the loader reads
            // every sample FluidSynth names, and FluidSynth decodes samples
            // on OpenMP threads of its own), up to a bound no real font
            // reaches. Otherwise only the last few: a render thread that is
            // not the marked one (a second offline render thread) can raise
            // a warning for every note, and 30,000 simultaneous notes used
            // to keep 600 MB of them.
            if FluidLog.loadingThread.load(ordering: .relaxed) != 0 {
                FluidLog.collected.withLock { if $0.count < 1 << 16 { $0.append(text) } }
            } else {
                FluidLog.stray.withLock { list in
                    if list.count >= 64 { list.removeFirst() }
                    list.append(text)
                }
            }
        }
        for level in [FLUID_PANIC, FLUID_ERR, FLUID_WARN, FLUID_INFO, FLUID_DBG] {
            fluid_set_log_function(Int32(level.rawValue), handler, nil)
        }
    }

    /// Marks the calling thread as loading a font (or no thread, `false`).
    static func markLoadingThread(_ loading: Bool = true) {
        loadingThread.store(loading ? UInt(pthread_self()) : 0, ordering: .relaxed)
    }

    /// Render path: until `leaveRender`, what FluidSynth says on this thread
    /// goes to `log`. Returns the log named before (restore it with
    /// `leaveRender`). Allocates nothing, takes no lock.
    @inline(__always)
    static func enterRender(_ log: RealtimeLog) -> UnsafeMutableRawPointer? {
        let previous = pthread_getspecific(renderKey)
        pthread_setspecific(renderKey, Unmanaged.passUnretained(log).toOpaque())
        return previous
    }

    @inline(__always)
    static func leaveRender(_ previous: UnsafeMutableRawPointer?) {
        pthread_setspecific(renderKey, previous)
    }

    /// Registers a unit's render log (control thread, with the unit's `init`),
    /// and forgets those of units that are gone: a process that creates unit
    /// after unit (a plugin host adding and removing instances) kept every
    /// log it ever made, 10 KB each.
    static func register(_ log: RealtimeLog, owner: AnyObject) {
        logs.withLock { entries in
            entries.removeAll { $0.owner.object == nil }
            entries.append((WeakOwner(owner), log))
        }
    }

    /// Removes and returns what FluidSynth said on the render path, in every
    /// unit (not on a render thread).
    static func drainRenderLogs() -> [String] {
        logs.withLock { entries in
            var out: [String] = []
            for entry in entries { out += entry.log.drain() }
            entries.removeAll { $0.owner.object == nil }
            return out
        }
    }

    /// Removes and returns the messages collected off the render thread.
    static func takeCollected() -> [String] {
        let others = stray.withLock { list in
            let out = list
            list.removeAll()
            return out
        }
        return others + collected.withLock { list in
            let out = list
            list.removeAll()
            return out
        }
    }
}

/// A weak reference to a unit whose render log is registered.
final class WeakOwner: @unchecked Sendable {
    weak var object: AnyObject?
    init(_ object: AnyObject) { self.object = object }
}
