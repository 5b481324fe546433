import CSndFile
import Glibc

/// A libsndfile virtual-I/O sink that streams a WAV file into a pipe.
///
/// libsndfile writes a WAV header, the samples, and at the end seeks back to
/// fill in the sizes — which a pipe cannot do. This sink holds the header
/// until the `data` chunk starts, marks the RIFF and data sizes as unknown
/// (0xFFFFFFFF, the streaming convention that readers such as sox, aplay and
/// ffmpeg accept) and then passes bytes straight through; the final rewrite
/// of bytes already sent is dropped.
final class PipeStream {
    let fd: Int32
    private var position: Int64 = 0     // libsndfile's idea of where it is
    private var length: Int64 = 0       // the largest position written
    private var emitted: Int64 = 0      // bytes actually sent
    private var header: [UInt8] = []
    private var headerDone = false
    /// Set when the reader went away (EPIPE).
    private(set) var brokenPipe = false
    private(set) var failed = false

    init(fd: Int32) { self.fd = fd }

    /// The callbacks libsndfile calls; `user_data` is an unretained PipeStream.
    static var callbacks: SF_VIRTUAL_IO {
        SF_VIRTUAL_IO(
            get_filelen: { ctx in Unmanaged<PipeStream>.fromOpaque(ctx!).takeUnretainedValue().length },
            seek: { offset, whence, ctx in
                let s = Unmanaged<PipeStream>.fromOpaque(ctx!).takeUnretainedValue()
                switch whence {
                case SEEK_SET: s.position = offset
                case SEEK_CUR: s.position += offset
                case SEEK_END: s.position = s.length + offset
                default: break
                }
                return s.position
            },
            read: { _, _, _ in 0 },
            write: { ptr, count, ctx in
                let s = Unmanaged<PipeStream>.fromOpaque(ctx!).takeUnretainedValue()
                return s.write(UnsafeRawBufferPointer(start: ptr, count: Int(count)))
            },
            tell: { ctx in Unmanaged<PipeStream>.fromOpaque(ctx!).takeUnretainedValue().position })
    }

    private func write(_ bytes: UnsafeRawBufferPointer) -> sf_count_t {
        let n = Int64(bytes.count)
        defer {
            position += n
            length = max(length, position)
        }
        if failed { return 0 }
        if !headerDone {
            // Collect the header as libsndfile lays it out, by position.
            let end = Int(position + n)
            if header.count < end { header += [UInt8](repeating: 0, count: end - header.count) }
            for (i, b) in bytes.enumerated() { header[Int(position) + i] = b }
            if let dataStart = Self.dataChunkOffset(header) {
                let patched = Self.patchSizes(header, dataChunk: dataStart)
                headerDone = true
                header = []
                if !send(patched) { return 0 }
            }
            return n
        }
        // Bytes before `emitted` were sent already (header rewrites at close): drop them.
        let skip = max(0, min(n, emitted - position))
        if skip < n, let base = bytes.baseAddress {
            if !send(UnsafeRawBufferPointer(start: base + Int(skip), count: Int(n - skip))) { return 0 }
        }
        return n
    }

    private func send(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { send($0) }
    }

    private func send(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var off = 0
        while off < bytes.count {
            let w = Glibc.write(fd, bytes.baseAddress! + off, bytes.count - off)
            if w < 0 {
                if errno == EINTR { continue }
                if errno == EPIPE { brokenPipe = true }
                failed = true
                return false
            }
            off += w
        }
        emitted += Int64(bytes.count)
        return true
    }

    /// Offset just past the `data` chunk header, once the header holds it.
    static func dataChunkOffset(_ h: [UInt8]) -> Int? {
        guard h.count >= 12 else { return nil }
        var o = 12
        while o + 8 <= h.count {
            let size = Int(h[o + 4]) | Int(h[o + 5]) << 8 | Int(h[o + 6]) << 16 | Int(h[o + 7]) << 24
            if h[o] == 0x64 && h[o + 1] == 0x61 && h[o + 2] == 0x74 && h[o + 3] == 0x61 { return o + 8 }   // "data"
            o += 8 + size + (size & 1)
        }
        return nil
    }

    static func patchSizes(_ h: [UInt8], dataChunk: Int) -> [UInt8] {
        var out = h   // the header, plus any samples written with it
        for i in 4..<8 { out[i] = 0xFF }
        for i in (dataChunk - 4)..<dataChunk { out[i] = 0xFF }
        return out
    }
}
