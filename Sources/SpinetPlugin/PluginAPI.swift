// The C API of CSpinetPlugin/include/spinet_plugin.h, over PluginInstance:
// what the LV2 and CLAP glue (C) call. See the header for the threads each
// function may be called from.
import CFluidSynthRealtime
import CSpinetPlugin
import Glibc

/// The log callback and its context, called from the thread that logs.
private struct HostLog: @unchecked Sendable {
    let function: spinet_log_fn?
    let context: UnsafeMutableRawPointer?

    func callAsFunction(_ level: Int32, _ line: String) {
        guard let function else {
            let prefix = level >= 2 ? "error: " : level == 1 ? "warning: " : ""
            let text = "spinet: \(prefix)\(line)\n"
            _ = text.withCString { write(STDERR_FILENO, $0, strlen($0)) }
            return
        }
        line.withCString { function(context, level, $0) }
    }
}

private func instance(_ p: OpaquePointer?) -> PluginInstance? {
    guard let p else { return nil }
    return Unmanaged<PluginInstance>.fromOpaque(UnsafeRawPointer(p)).takeUnretainedValue()
}

/// The parameter table, built once (static C strings).
nonisolated(unsafe) private let parameterTable: UnsafeMutablePointer<spinet_param_info> = {
    let all = PluginParameter.allCases
    let table = UnsafeMutablePointer<spinet_param_info>.allocate(capacity: all.count)
    for (i, p) in all.enumerated() {
        table[i] = spinet_param_info(id: UInt32(p.rawValue), symbol: strdup(p.symbol), name: strdup(p.name), unit: strdup(p.unit),
                                     min_value: p.range.lowerBound, max_value: p.range.upperBound, default_value: p.defaultValue)
    }
    return table
}()

@_cdecl("spinet_plugin_param_info")
public func spinetPluginParamInfo(_ index: UInt32) -> UnsafePointer<spinet_param_info>? {
    guard Int(index) < PluginParameter.allCases.count else { return nil }
    return UnsafePointer(parameterTable + Int(index))
}

@_cdecl("spinet_plugin_create")
public func spinetPluginCreate(_ sampleRate: Double, _ bundleDirectory: UnsafePointer<CChar>?, _ log: spinet_log_fn?,
                               _ logContext: UnsafeMutableRawPointer?) -> OpaquePointer? {
    let hostLog = HostLog(function: log, context: logContext)
    do {
        let p = try PluginInstance(sampleRate: sampleRate, bundleDirectory: bundleDirectory.map { String(cString: $0) },
                                   log: { hostLog($0, $1) })
        return OpaquePointer(Unmanaged.passRetained(p).toOpaque())
    } catch {
        hostLog(2, error.description)
        return nil
    }
}

@_cdecl("spinet_plugin_destroy")
public func spinetPluginDestroy(_ p: OpaquePointer?) {
    guard let p else { return }
    let i = Unmanaged<PluginInstance>.fromOpaque(UnsafeRawPointer(p))
    i.takeUnretainedValue().stopLoader()
    i.release()
}

@_cdecl("spinet_plugin_activate")
public func spinetPluginActivate(_ p: OpaquePointer?, _ maxFrames: UInt32) -> Int32 {
    guard let i = instance(p) else { return -1 }
    do { try i.activate(maxFrames: Int(maxFrames)) } catch {
        i.logLine(2, error.description)
        return -1
    }
    return 0
}

@_cdecl("spinet_plugin_deactivate")
public func spinetPluginDeactivate(_ p: OpaquePointer?) {
    instance(p)?.deactivate()
}

@_cdecl("spinet_plugin_wait_for_spare")
public func spinetPluginWaitForSpare(_ p: OpaquePointer?, _ timeoutMilliseconds: UInt32) -> Int32 {
    instance(p)?.waitForSpare(seconds: Double(timeoutMilliseconds) / 1000) == true ? 1 : 0
}

@_cdecl("spinet_plugin_process")
public func spinetPluginProcess(_ p: OpaquePointer?, _ frames: UInt32, _ left: UnsafeMutablePointer<Float>?,
                                _ right: UnsafeMutablePointer<Float>?, _ events: UnsafePointer<spinet_midi_event>?, _ count: UInt32) {
    guard let p, let left, let right else { return }
    Unmanaged<PluginInstance>.fromOpaque(UnsafeRawPointer(p))._withUnsafeGuaranteedRef {
        $0.process(frames: Int(frames), left: left, right: right, events: events, count: Int(count))
    }
}

@_cdecl("spinet_plugin_copy_channel_state")
public func spinetPluginCopyChannelState(_ to: OpaquePointer?, _ from: OpaquePointer?) {
    guard let to = instance(to), let from = instance(from), to !== from else { return }
    to.copyChannelState(from: from)
}

@_cdecl("spinet_plugin_set_tempo")
public func spinetPluginSetTempo(_ p: OpaquePointer?, _ bpm: Double) {
    guard let p else { return }
    Unmanaged<PluginInstance>.fromOpaque(UnsafeRawPointer(p))._withUnsafeGuaranteedRef { $0.setTempo(beatsPerMinute: bpm) }
}

@_cdecl("spinet_plugin_latency")
public func spinetPluginLatency(_ p: OpaquePointer?) -> UInt32 {
    guard let p else { return 0 }
    return Unmanaged<PluginInstance>.fromOpaque(UnsafeRawPointer(p))._withUnsafeGuaranteedRef { UInt32($0.latencyFrames) }
}

@_cdecl("spinet_plugin_set_param")
public func spinetPluginSetParam(_ p: OpaquePointer?, _ id: UInt32, _ value: Double) {
    guard let p, let parameter = PluginParameter(rawValue: Int(id)) else { return }
    Unmanaged<PluginInstance>.fromOpaque(UnsafeRawPointer(p))._withUnsafeGuaranteedRef { $0.setParameter(parameter, value) }
}

@_cdecl("spinet_plugin_get_param")
public func spinetPluginGetParam(_ p: OpaquePointer?, _ id: UInt32) -> Double {
    guard let p, let parameter = PluginParameter(rawValue: Int(id)) else { return 0 }
    return Unmanaged<PluginInstance>.fromOpaque(UnsafeRawPointer(p))._withUnsafeGuaranteedRef { $0.parameter(parameter) }
}

@_cdecl("spinet_plugin_load_soundfont")
public func spinetPluginLoadSoundFont(_ p: OpaquePointer?, _ path: UnsafePointer<CChar>?) -> Int32 {
    guard let i = instance(p), let path else { return -1 }
    return i.loadSoundFontLogging(String(cString: path))
}

@_cdecl("spinet_plugin_request_soundfont")
public func spinetPluginRequestSoundFont(_ p: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ length: Int) -> Int32 {
    guard let p, let path else { return -1 }
    return Unmanaged<PluginInstance>.fromOpaque(UnsafeRawPointer(p))._withUnsafeGuaranteedRef { i in
        path.withMemoryRebound(to: UInt8.self, capacity: length) { i.requestSoundFont(UnsafeBufferPointer(start: $0, count: length)) }
    } ? 0 : -1
}

/// The listener and its context, called on the loader thread.
private struct FontListener: @unchecked Sendable {
    let function: spinet_soundfont_loaded_fn
    let context: UnsafeMutableRawPointer?
}

@_cdecl("spinet_plugin_set_soundfont_listener")
public func spinetPluginSetSoundFontListener(_ p: OpaquePointer?, _ function: spinet_soundfont_loaded_fn?,
                                             _ context: UnsafeMutableRawPointer?) {
    guard let i = instance(p) else { return }
    guard let function else { i.setSoundFontListener(nil); return }
    let listener = FontListener(function: function, context: context)
    i.setSoundFontListener { status in listener.function(listener.context, status) }
}

/// Copies `bytes` into `buffer` (NUL-terminated, truncated to `capacity`).
private func copyOut(_ bytes: UnsafeBufferPointer<UInt8>, _ buffer: UnsafeMutablePointer<CChar>?, _ capacity: Int) {
    guard let buffer, capacity > 0 else { return }
    let n = min(bytes.count, capacity - 1)
    for k in 0..<n { buffer[k] = CChar(bitPattern: bytes[k]) }
    buffer[n] = 0
}

@_cdecl("spinet_plugin_take_soundfont_result")
public func spinetPluginTakeSoundFontResult(_ p: OpaquePointer?, _ status: UnsafeMutablePointer<Int32>?,
                                            _ requested: UnsafeMutablePointer<CChar>?, _ requestedCapacity: Int,
                                            _ inUse: UnsafeMutablePointer<CChar>?, _ inUseCapacity: Int) -> Int32 {
    guard let p else { return 0 }
    return Unmanaged<PluginInstance>.fromOpaque(UnsafeRawPointer(p))._withUnsafeGuaranteedRef { i in
        i.takeSoundFontResult { (s, a, b) -> Bool in
            status?.pointee = s
            copyOut(a, requested, requestedCapacity)
            copyOut(b, inUse, inUseCapacity)
            return true
        } ?? false
    } ? 1 : 0
}

@_cdecl("spinet_plugin_soundfont_path")
public func spinetPluginSoundFontPath(_ p: OpaquePointer?, _ buffer: UnsafeMutablePointer<CChar>?, _ capacity: Int) -> Int {
    guard let i = instance(p) else { return 0 }
    let path = Array(i.soundFontPath.utf8)
    path.withUnsafeBufferPointer { copyOut($0, buffer, capacity) }
    return path.count
}

@_cdecl("spinet_plugin_save_state")
public func spinetPluginSaveState(_ p: OpaquePointer?) -> UnsafeMutablePointer<CChar>? {
    guard let i = instance(p) else { return nil }
    return strdup(i.saveState())
}

@_cdecl("spinet_plugin_free_string")
public func spinetPluginFreeString(_ s: UnsafeMutablePointer<CChar>?) {
    free(s)
}

@_cdecl("spinet_plugin_restore_state")
public func spinetPluginRestoreState(_ p: OpaquePointer?, _ json: UnsafePointer<CChar>?, _ soundFont: UnsafePointer<CChar>?) -> Int32 {
    guard let i = instance(p), let json else { return -1 }
    do { try i.restoreState(String(cString: json), soundFontOverride: soundFont.map { String(cString: $0) }) } catch {
        i.logLine(2, "cannot restore the saved state: \(error.description)")
        return -1
    }
    return 0
}

@_cdecl("spinet_plugin_name_table")
public func spinetPluginNameTable(_ p: OpaquePointer?) -> UnsafeMutablePointer<spinet_name_table>? {
    guard let i = instance(p) else { return nil }
    let names = i.nameTable()
    let table = UnsafeMutablePointer<spinet_name_table>.allocate(capacity: 1)
    let programs = UnsafeMutablePointer<spinet_program_name>.allocate(capacity: max(names.programs.count, 1))
    for (k, n) in names.programs.enumerated() {
        programs[k] = spinet_program_name(bank: UInt32(n.bank), program: UInt32(n.program), name: UnsafePointer(strdup(n.name)))
    }
    let keys = UnsafeMutablePointer<spinet_key_name>.allocate(capacity: max(names.keys.count, 1))
    for (k, n) in names.keys.enumerated() {
        keys[k] = spinet_key_name(bank: UInt32(n.bank), program: UInt32(n.program), key: UInt32(n.key), name: UnsafePointer(strdup(n.name)))
    }
    table.initialize(to: spinet_name_table(program_count: UInt32(names.programs.count), programs: programs,
                                           key_count: UInt32(names.keys.count), keys: keys))
    return table
}

@_cdecl("spinet_plugin_free_name_table")
public func spinetPluginFreeNameTable(_ table: UnsafeMutablePointer<spinet_name_table>?) {
    guard let table else { return }
    let t = table.pointee
    for k in 0..<Int(t.program_count) { free(UnsafeMutableRawPointer(mutating: t.programs[k].name)) }
    for k in 0..<Int(t.key_count) { free(UnsafeMutableRawPointer(mutating: t.keys[k].name)) }
    UnsafeMutablePointer(mutating: t.programs).deallocate()
    UnsafeMutablePointer(mutating: t.keys).deallocate()
    table.deallocate()
}

@_cdecl("spinet_plugin_inline_parallel_regions")
public func spinetPluginInlineParallelRegions() -> UInt {
    spinet_inline_parallel_regions()
}
